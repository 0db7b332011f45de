package mcptest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseTxtar(t *testing.T) {
	tests := []struct {
		in   string
		want *Archive
	}{
		{"", &Archive{}},
		{"just a comment", &Archive{Comment: []byte("just a comment\n")}},
		{"c\n-- a --\nA\n-- b.json --\n{}\n", &Archive{Comment: []byte("c\n"), Files: []File{{"a", []byte("A\n")}, {"b.json", []byte("{}\n")}}}},
		{"-- a --\n-- b --\nB", &Archive{Files: []File{{"a", nil}, {"b", []byte("B\n")}}}},
		{"-- a --\r\nA\r\n", &Archive{Files: []File{{"a", []byte("A\r\n")}}}},
		{"--  --\n-- x--\n--y --\n", &Archive{Comment: []byte("--  --\n-- x--\n--y --\n")}},
	}
	for _, tt := range tests {
		got := ParseTxtar([]byte(tt.in))
		assert.Equal(t, tt.want, got, "%q", tt.in)
		assert.Equal(t, tt.want, ParseTxtar(got.Format()), "round trip of %q", tt.in)
	}
}

func ExampleParseTxtar() {
	a := ParseTxtar([]byte("A transcript.\n-- server --\n{}\n-- session --\n> {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"))
	fmt.Printf("comment: %s", a.Comment)
	for _, f := range a.Files {
		fmt.Printf("%s: %s", f.Name, f.Data)
	}
	// Output:
	// comment: A transcript.
	// server: {}
	// session: > {"jsonrpc":"2.0","id":1,"method":"ping"}
}
