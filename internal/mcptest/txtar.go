package mcptest

import (
	"bytes"
	"strings"
)

// Archive is a txtar archive: a free-form comment, then files, each
// introduced by a marker line "-- name --". It is the format of golang.org/x/tools/txtar,
// written out here to keep the module's dependencies as they are.
type Archive struct {
	Comment []byte
	Files   []File
}

// File is one file of an Archive. Data ends with a newline unless empty.
type File struct {
	Name string
	Data []byte
}

// ParseTxtar parses a txtar archive. It never fails: text before the first
// marker is the comment, and a final line without a newline gets one.
func ParseTxtar(data []byte) *Archive {
	a := &Archive{}
	var cur *[]byte = &a.Comment
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		if name, ok := marker(line); ok {
			a.Files = append(a.Files, File{Name: name})
			cur = &a.Files[len(a.Files)-1].Data
			continue
		}
		*cur = append(*cur, line...)
		if line[len(line)-1] != '\n' {
			*cur = append(*cur, '\n')
		}
	}
	return a
}

// marker reports whether line is "-- name --" and returns the name.
func marker(line []byte) (string, bool) {
	s := strings.TrimRight(string(line), "\r\n")
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < 7 {
		return "", false
	}
	name := strings.TrimSpace(s[3 : len(s)-3])
	return name, name != ""
}

// Format returns the archive in txtar form; ParseTxtar(a.Format()) equals a.
func (a *Archive) Format() []byte {
	var b bytes.Buffer
	b.Write(fixNL(a.Comment))
	for _, f := range a.Files {
		b.WriteString("-- " + f.Name + " --\n")
		b.Write(fixNL(f.Data))
	}
	return b.Bytes()
}

func fixNL(data []byte) []byte {
	if len(data) == 0 || data[len(data)-1] == '\n' {
		return data
	}
	return append(append([]byte(nil), data...), '\n')
}
