package main

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// The binary fixtures: a 1×1 red PNG image and a WAV file of silence,
// built once at start-up. Tools, resources and prompts embed them; keel's
// content helpers (mcp.Image, mcp.Audio, mcp.EmbeddedBlob) encode raw
// bytes as base64 themselves.
var (
	redPixelPNG = makePNG()
	silenceWAV  = makeWAV(8000, 8) // 8 samples of 16-bit mono silence at 8 kHz (1 ms)
)

func makePNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.RGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory image cannot fail
	}
	return buf.Bytes()
}

// makeWAV returns a RIFF/WAVE file of n samples of 16-bit mono PCM silence.
func makeWAV(sampleRate, n uint32) []byte {
	const bytesPerSample = 2
	dataLen := n * bytesPerSample
	var buf bytes.Buffer
	w := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	w(36 + dataLen)
	buf.WriteString("WAVEfmt ")
	w(uint32(16))                  // fmt chunk size
	w(uint16(1))                   // PCM
	w(uint16(1))                   // mono
	w(sampleRate)                  // sample rate
	w(sampleRate * bytesPerSample) // byte rate
	w(uint16(bytesPerSample))      // block align
	w(uint16(8 * bytesPerSample))  // bits per sample
	buf.WriteString("data")
	w(dataLen)
	buf.Write(make([]byte, dataLen))
	return buf.Bytes()
}
