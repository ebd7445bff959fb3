package mcp

import (
	"bytes"
	"testing"
)

// The bus carries what other processes wrote, so a message is read as untrusted: decoding
// never panics, accepts only what encodeChange writes, and what it accepts encodes back to
// the same bytes.
func FuzzDecodeChange(f *testing.F) {
	var id [busIDLen]byte
	id[3] = 9
	for _, c := range []change{{kind: toolsChanged}, {kind: promptsChanged}, {kind: resourcesChanged},
		{kind: resourceUpdated, uri: "test://doc"}, {kind: taskChanged, uri: "AAAA"}} {
		f.Add(encodeChange(id, c))
	}
	f.Add([]byte{})
	f.Add([]byte{2, 1})
	f.Add(append(encodeChange(id, change{kind: resourceUpdated, uri: "x"}), 0xff))
	f.Fuzz(func(t *testing.T, msg []byte) {
		from, c, why := decodeChange(msg)
		if why != "" {
			return
		}
		if again := encodeChange(from, c); !bytes.Equal(again, msg) {
			t.Fatalf("decoded %x as %+v from %x, which encodes as %x", msg, c, from, again)
		}
	})
}

// A change whose subject the wire format cannot carry is not sent, rather than sent cut.
func TestEncodeChange_RefusesWhatItCannotCarry(t *testing.T) {
	var id [busIDLen]byte
	if msg := encodeChange(id, change{kind: resourceUpdated, uri: string(make([]byte, busMaxSubject+1))}); msg != nil {
		t.Fatalf("a subject over %d bytes encoded as %d bytes", busMaxSubject, len(msg))
	}
	if msg := encodeChange(id, change{kind: busResumed}); msg != nil {
		t.Fatalf("busResumed, which only the hub carries, encoded as %x", msg)
	}
}
