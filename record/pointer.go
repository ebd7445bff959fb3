package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Pointer is a JSON pointer (RFC 6901), split into its reference tokens.
type Pointer []string

// ParsePointer reads a JSON pointer such as /params/arguments/password ("~1" stands for
// "/", "~0" for "~").
func ParsePointer(s string) (Pointer, error) {
	if s == "" || s[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q must start with / (e.g. /params/arguments/password)", s)
	}
	parts := strings.Split(s[1:], "/")
	for i, p := range parts {
		if strings.Contains(strings.NewReplacer("~0", "", "~1", "").Replace(p), "~") {
			return nil, fmt.Errorf("JSON pointer %q: a ~ must be followed by 0 or 1", s)
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// ParsePointers reads a comma-separated list of JSON pointers, as a flag gives them; an
// empty string is none.
func ParsePointers(list string) ([]Pointer, error) {
	var ps []Pointer
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := ParsePointer(s)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

func (p Pointer) String() string {
	var b strings.Builder
	for _, t := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// decode reads JSON keeping numbers as written, so that re-encoding changes no value.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// apply calls fn on the value at p within v, through objects and arrays; fn returns the
// new value, or remove to delete it. It reports whether p was found.
func apply(v any, p Pointer, fn func(any) (any, bool)) bool {
	if len(p) == 0 {
		return false // the whole message is never replaced
	}
	for i, tok := range p {
		last := i == len(p)-1
		switch c := v.(type) {
		case map[string]any:
			next, ok := c[tok]
			if !ok {
				return false
			}
			if last {
				if nv, keep := fn(next); keep {
					c[tok] = nv
				} else {
					delete(c, tok)
				}
				return true
			}
			v = next
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(c) || (len(tok) > 1 && tok[0] == '0') {
				return false
			}
			if last {
				if nv, keep := fn(c[n]); keep {
					c[n] = nv
				} else {
					c[n] = nil // an array keeps its length; the element no longer counts
				}
				return true
			}
			v = c[n]
		default:
			return false
		}
	}
	return false
}

// Redacted is what a redacted value becomes.
const Redacted = "[redacted]"

// Redact returns msg with the values at ps replaced by "[redacted]", and whether any was.
// A message none of the pointers reaches is returned as it is, byte for byte; one that is
// redacted is re-encoded (its keys sorted).
func Redact(msg []byte, ps []Pointer) ([]byte, bool) {
	if len(ps) == 0 {
		return msg, false
	}
	v, err := decode(msg)
	if err != nil {
		return msg, false
	}
	hit := false
	for _, p := range ps {
		hit = apply(v, p, func(any) (any, bool) { return Redacted, true }) || hit
	}
	if !hit {
		return msg, false
	}
	out, err := json.Marshal(v)
	if err != nil {
		return msg, false
	}
	return out, true
}
