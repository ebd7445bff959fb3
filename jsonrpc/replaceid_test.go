package jsonrpc

import "testing"

func TestReplaceID_SwapsTheDecodedIDAndKeepsEveryOtherByte(t *testing.T) {
	for _, c := range []struct{ frame, id, want string }{
		{`{"jsonrpc":"2.0","id":7,"method":"m","params":{"id":1}}`, `"a"`, `{"jsonrpc":"2.0","id":"a","method":"m","params":{"id":1}}`},
		{`{"params":{"id":1},"method":"m","jsonrpc":"2.0", "id" : "x\"y" }`, `12`, `{"params":{"id":1},"method":"m","jsonrpc":"2.0", "id" : 12 }`},
		{`{"jsonrpc":"2.0","result":{},"id":123456789}`, `1`, `{"jsonrpc":"2.0","result":{},"id":1}`},
	} {
		frame := []byte(c.frame)
		m, err := Decode(frame)
		if err != nil {
			t.Fatalf("%s: %v", c.frame, err)
		}
		if got := ReplaceID(frame, m.ID, ID(c.id)); string(got) != c.want {
			t.Errorf("ReplaceID(%s, %s) = %s, want %s", c.frame, c.id, got, c.want)
		}
		if string(frame) != c.frame {
			t.Errorf("ReplaceID changed its input: %s", frame)
		}
		// In place: in the frame's own memory when its capacity allows, a copy otherwise.
		for _, spare := range []int{0, 16} {
			owned := append(make([]byte, 0, len(frame)+spare), frame...)
			m, _ := Decode(owned)
			got := ReplaceIDInPlace(owned, m.ID, ID(c.id))
			if string(got) != c.want {
				t.Errorf("ReplaceIDInPlace(%s, %s) with %d spare = %s, want %s", c.frame, c.id, spare, got, c.want)
			}
			fits := len(c.want) <= cap(owned)
			if same := &got[0] == &owned[0]; same != fits {
				t.Errorf("ReplaceIDInPlace(%s, %s) with %d spare: in place %v, want %v", c.frame, c.id, spare, same, fits)
			}
		}
	}
}

func TestReplaceID_OfAnIDNotFromTheFrameSetsTheMember(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","id":7,"result":{"id":7}}`)
	other := []byte(`{"id":7}`)
	m, _ := Decode(other)
	if got, want := string(ReplaceID(frame, m.ID, ID(`8`))), `{"jsonrpc":"2.0","id":8,"result":{"id":7}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if got, want := string(ReplaceID(frame, nil, ID(`8`))), `{"jsonrpc":"2.0","id":8,"result":{"id":7}}`; got != want {
		t.Errorf("nil old: got %s, want %s", got, want)
	}
}
