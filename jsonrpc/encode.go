package jsonrpc

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// AppendResult appends a response carrying result, which must be valid JSON.
func AppendResult(dst []byte, id ID, result []byte) []byte {
	dst = AppendResultPrefix(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendResultPrefix appends the start of a success response, up to and including
// `"result":`, for a result that is encoded straight into the frame; the caller appends the
// result and then the closing '}'.
func AppendResultPrefix(dst []byte, id ID) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	return append(dst, `,"result":`...)
}

// AppendError appends an error response. A nil id leaves the member out, as MCP does for a
// request whose id could not be read; pass Null for protocols that send "id": null.
func AppendError(dst []byte, id ID, e *Error) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	dst = appendErrorObject(dst, e)
	return append(dst, '}')
}

func appendErrorObject(dst []byte, e *Error) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, e.Code, 10)
	dst = append(dst, `,"message":`...)
	dst = appendString(dst, e.Message)
	if e.Data != nil {
		data, err := json.Marshal(e.Data)
		if err == nil {
			dst = append(dst, `,"data":`...)
			dst = append(dst, data...)
		}
	}
	return append(dst, '}')
}

// AppendRequest appends a request; params may be nil.
func AppendRequest(dst []byte, id ID, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	return appendCall(dst, method, params)
}

// AppendNotification appends a notification; params may be nil.
func AppendNotification(dst []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0"`...)
	return appendCall(dst, method, params)
}

func appendCall(dst []byte, method string, params []byte) []byte {
	dst = append(dst, `,"method":`...)
	dst = appendString(dst, method)
	if params != nil {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte { return AppendString(dst, s) }

const hexDigits = "0123456789abcdef"

// plainASCII32 reports whether the 32 bytes at d[i:] are all ASCII that AppendString copies
// as it is: none flagged by special8.
func plainASCII32(d []byte, i int) bool {
	d = d[i : i+32]
	return special8(binary.LittleEndian.Uint64(d))|special8(binary.LittleEndian.Uint64(d[8:]))|
		special8(binary.LittleEndian.Uint64(d[16:]))|special8(binary.LittleEndian.Uint64(d[24:])) == 0
}

// special8 flags (in the top bit of each byte) the bytes of x that AppendString cannot copy
// as they are: those notPlain flags, and non-ASCII ones (to check their UTF-8).
func special8(x uint64) uint64 { return notPlain(x) | x&msb }

// AppendString appends s as a JSON string: quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD and U+2028 and U+2029 escaped (as encoding/json
// does), everything else copied as it is. Runs of plain ASCII are checked a word at a time.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	d := unsafe.Slice(unsafe.StringData(s), len(s)) // read only: words load as one
	start := 0
	for i := 0; i < len(s); {
		// Plain ASCII 32 and then 8 bytes a step; at a word that holds a byte to look at, jump
		// straight to it (the lowest flagged byte is always a true one). The words load from
		// a byte view of s: loaded from the string byte by byte, each took eight bounds checks.
		for i+32 <= len(d) && plainASCII32(d, i) {
			i += 32
		}
		for i+8 <= len(d) {
			if m := special8(binary.LittleEndian.Uint64(d[i:])); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		switch {
		case c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf:
			i++
			continue
		case c < utf8.RuneSelf:
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// SetMember returns a copy of the JSON object obj with the member key set to value (raw
// JSON): replaced where it stands when present, added first otherwise; every other byte is
// kept as it was. obj must be valid JSON; anything that is not an object is taken as {}.
func SetMember(obj []byte, key string, value []byte) []byte {
	var old []byte
	EachMember(obj, func(k, v []byte) bool {
		if string(k) == key {
			old = v
			return false
		}
		return true
	})
	if old != nil {
		start := cap(obj) - cap(old) // old is obj[start:start+len(old)]
		out := make([]byte, 0, len(obj)-len(old)+len(value))
		out = append(out, obj[:start]...)
		out = append(out, value...)
		return append(out, obj[start+len(old):]...)
	}
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		obj, i = []byte("{}"), 0
	}
	out := make([]byte, 0, len(obj)+len(key)+len(value)+4)
	out = append(out, obj[:i+1]...)
	out = appendString(out, key)
	out = append(out, ':')
	out = append(out, value...)
	if rest := skipSpace(obj, i+1); rest < len(obj) && obj[rest] != '}' {
		out = append(out, ',')
	}
	return append(out, obj[i+1:]...)
}

// ReplaceID returns a copy of the message frame with its id replaced by id. old is the id
// as Decode returned it from frame: a slice of frame, which is then swapped for id without
// reading the rest of the frame again (a proxy's renaming of ids, per message). When old is
// not a slice of frame, frame is read as SetMember reads it.
func ReplaceID(frame []byte, old, id ID) []byte {
	start, ok := idAt(frame, old)
	if !ok {
		return SetMember(frame, "id", id)
	}
	out := make([]byte, 0, len(frame)-len(old)+len(id))
	out = append(out, frame[:start]...)
	out = append(out, id...)
	return append(out, frame[start+len(old):]...)
}

// ReplaceIDInPlace is ReplaceID for a frame that the caller owns and that nothing else reads:
// the id is swapped in the frame's own memory when its capacity allows (as it mostly does
// when the ids are about as long), which spares a copy of the frame; otherwise it returns
// ReplaceID's copy. No slice of frame (old, a Message's members) is valid after it.
func ReplaceIDInPlace(frame []byte, old, id ID) []byte {
	start, ok := idAt(frame, old)
	n := len(frame) - len(old) + len(id)
	if !ok || n > cap(frame) {
		return ReplaceID(frame, old, id)
	}
	out := frame[:n]
	copy(out[start+len(id):], frame[start+len(old):]) // copy moves overlapping bytes right
	copy(out[start:], id)
	return out
}

// idAt returns where old begins in frame, and whether old is a slice of frame at all.
func idAt(frame []byte, old ID) (int, bool) {
	start := cap(frame) - cap(old)
	if len(old) == 0 || start < 0 || start+len(old) > len(frame) || &frame[start] != &old[0] {
		return 0, false
	}
	return start, true
}
