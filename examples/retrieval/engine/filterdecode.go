package engine

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a retrieve's filter (RCP/1 §8). A filter beyond one is refused with a
// *FieldError (-32602) before any of it is evaluated: beyond the first two, while it is
// decoded.
const (
	// MaxFilterDepth is how deeply filter nodes may nest: a comparison alone is depth 1, and
	// each and, or or not around it adds one.
	MaxFilterDepth = 64
	// MaxFilterNodes is how many filter nodes (comparisons and combinators) one filter may hold.
	MaxFilterNodes = 1024
	// MaxFilterValues is how many values the lists of one filter's comparisons (in, nin) may
	// hold in all.
	MaxFilterValues = 1024
)

// decodeFilter decodes a filter node and its children in one pass over raw: time and memory
// are linear in its size, and decoding stops at the first node beyond MaxFilterDepth or
// MaxFilterNodes. Whether the fields and operators are allowed is checked later, against the
// engine's configuration.
//
// The result is that of decoding each object into a map (the last of duplicate members
// wins) and then reading its members in a fixed order (and, or, not, field, op), so the
// error reported for a node with several faults is always the same one.
func decodeFilter(raw []byte, path string) (*Filter, error) {
	if !json.Valid(raw) {
		return nil, fieldErr(orParams(path), "must be an object")
	}
	d := filterDecoder{data: raw, root: path}
	d.space()
	var f Filter
	if err := d.node(&f, 1); err != nil {
		return nil, err
	}
	return &f, nil
}

// filterDecoder reads a filter from JSON that json.Valid accepted, so it need not handle
// syntax errors. The path of the node being read is kept as a stack of segments and
// formatted only for an error.
type filterDecoder struct {
	data  []byte
	pos   int
	root  string
	segs  []pathSeg
	nodes int
	limit *FieldError // a limit was passed: decoding stops
}

// pathSeg is ".name" (index < 0) or "[index]".
type pathSeg struct {
	name  string
	index int
}

func (d *filterDecoder) path(extra ...pathSeg) string {
	var b strings.Builder
	b.WriteString(d.root)
	for _, s := range append(d.segs[:len(d.segs):len(d.segs)], extra...) {
		if s.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

func member(name string) pathSeg { return pathSeg{name: name, index: -1} }

// filterMember is what one member of a node decoded to; only the last occurrence of a name
// counts.
type filterMember struct {
	present bool // present and not null
	err     error
}

// node reads the object at d.pos into f; depth is f's own depth (the root is 1).
func (d *filterDecoder) node(f *Filter, depth int) error {
	if d.peek() != '{' {
		d.skip()
		return fieldErr(orParams(d.path()), "must be an object")
	}
	if depth > MaxFilterDepth {
		d.limit = fieldErr(d.path(), "nests deeper than the limit of %d filters; "+
			"flatten it (and and or take any number of filters)", MaxFilterDepth)
		return d.limit
	}
	if d.nodes++; d.nodes > MaxFilterNodes {
		d.limit = fieldErr(orFilter(d.root), "holds more than the limit of %d filters; "+
			"split the query, or match a list of values with one in or nin", MaxFilterNodes)
		return d.limit
	}
	var and, or, not, field, op filterMember
	var value any
	var valueErr error // a number beyond float64
	d.pos++            // {
	for d.space(); d.peek() != '}'; d.space() {
		if d.pos >= len(d.data) {
			return fieldErr(orParams(d.path()), "must be an object")
		}
		if d.peek() == ',' {
			d.pos++
			d.space()
		}
		name := d.key()
		d.space()
		d.pos++ // :
		d.space()
		null := d.peekNull()
		switch name {
		case "and", "or":
			m, dst := &and, &f.And
			if name == "or" {
				m, dst = &or, &f.Or
			}
			*m, *dst = filterMember{present: !null}, nil
			if null {
				d.skip()
				break
			}
			m.err = d.list(name, dst, depth)
		case "not":
			not, f.Not = filterMember{present: !null}, nil
			if null {
				d.skip()
				break
			}
			f.Not = new(Filter)
			d.segs = append(d.segs, member("not"))
			not.err = d.node(f.Not, depth+1)
			d.segs = d.segs[:len(d.segs)-1]
		case "field", "op":
			m, dst := &field, &f.Field
			if name == "op" {
				m, dst = &op, &f.Op
			}
			*m, *dst = filterMember{present: !null}, ""
			switch {
			case null:
				d.skip()
			case d.peek() == '"':
				*dst = d.string()
			default:
				d.skip()
				m.err = fieldErr(d.path(member(name)), "must be a string")
			}
		case "value":
			value, valueErr = d.value()
		default: // unknown members are ignored
			d.skip()
		}
		if d.limit != nil {
			return d.limit
		}
	}
	d.pos++ // }

	kinds := 0
	for _, m := range []filterMember{and, or, not} {
		if m.err != nil {
			return m.err
		}
		if m.present {
			kinds++
		}
	}
	if field.present || op.present {
		kinds++
		if field.err != nil {
			return field.err
		}
		if op.err != nil {
			return op.err
		}
		if valueErr != nil {
			return fieldErr(d.path(member("value")), "must be a JSON value")
		}
		f.Value = value
	} else {
		f.Field, f.Op = "", ""
	}
	if kinds != 1 {
		return fieldErr(orFilter(d.path()), "must be exactly one of a comparison {field, op, value}, and, or, not")
	}
	return nil
}

// list reads the array of filters of member name (and, or) into dst. After the first filter
// in error the rest of the array is skipped, and that error is returned.
func (d *filterDecoder) list(name string, dst *[]Filter, depth int) error {
	if d.peek() != '[' {
		d.skip()
		return fieldErr(d.path(member(name)), "must be an array of filters")
	}
	d.pos++ // [
	*dst = []Filter{}
	d.segs = append(d.segs, member(name), pathSeg{})
	defer func() { d.segs = d.segs[:len(d.segs)-2] }()
	for i := 0; ; i++ {
		d.space()
		if d.pos >= len(d.data) {
			return fieldErr(d.path(member(name)), "must be an array of filters")
		}
		switch d.peek() {
		case ']':
			d.pos++
			return nil
		case ',':
			d.pos++
			d.space()
		}
		d.segs[len(d.segs)-1].index = i
		*dst = append(*dst, Filter{})
		if err := d.node(&(*dst)[i], depth+1); err != nil {
			if d.limit == nil {
				d.skipRest(']')
			}
			return err
		}
	}
}

// value reads the value at d.pos as encoding/json decodes it into an any; the commonest
// kinds, a plain string and the literals, without a decoder of its own.
func (d *filterDecoder) value() (any, error) {
	start := d.pos
	switch d.peek() {
	case '"':
		if !d.skipString() && utf8.Valid(d.data[start+1:d.pos-1]) {
			return string(d.data[start+1 : d.pos-1]), nil
		}
	case 't', 'f', 'n':
		d.skip()
		switch d.data[start] {
		case 't':
			return true, nil
		case 'f':
			return false, nil
		}
		return nil, nil
	default:
		d.skip()
	}
	var v any
	err := json.Unmarshal(d.data[start:d.pos], &v)
	return v, err
}

// orFilter names the filter itself when it is the whole params (a direct call).
func orFilter(path string) string {
	if path == "" {
		return "filter"
	}
	return path
}

// The scanner below moves over valid JSON only.

func (d *filterDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *filterDecoder) peekNull() bool {
	return d.pos+4 <= len(d.data) && string(d.data[d.pos:d.pos+4]) == "null"
}

func (d *filterDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// key reads the member name at d.pos: one of the names a filter node knows, or "" for any
// other, without allocating unless the name holds an escape.
func (d *filterDecoder) key() string {
	start := d.pos
	if d.skipString() || !utf8.Valid(d.data[start+1:d.pos-1]) {
		d.pos = start
		return d.string()
	}
	switch k := d.data[start+1 : d.pos-1]; string(k) {
	case "and":
		return "and"
	case "or":
		return "or"
	case "not":
		return "not"
	case "field":
		return "field"
	case "op":
		return "op"
	case "value":
		return "value"
	}
	return ""
}

// string reads the string at d.pos and returns its value, with escapes resolved and
// invalid UTF-8 replaced as encoding/json does.
func (d *filterDecoder) string() string {
	start := d.pos
	if !d.skipString() && utf8.Valid(d.data[start+1:d.pos-1]) {
		return string(d.data[start+1 : d.pos-1])
	}
	var s string
	json.Unmarshal(d.data[start:d.pos], &s) // valid JSON: cannot fail
	return s
}

// skipString moves past the string at d.pos and reports whether it holds an escape.
func (d *filterDecoder) skipString() (escaped bool) {
	d.pos++ // "
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '\\':
			escaped = true
			d.pos += 2
			continue
		case '"':
			d.pos++
			return escaped
		}
		d.pos++
	}
	return escaped
}

// skip moves past the value at d.pos, however deeply it nests, in one pass.
func (d *filterDecoder) skip() {
	depth := 0
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '"':
			d.skipString()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				d.pos++
				return
			}
			if depth < 0 { // the end of the enclosing value: not part of this one
				return
			}
		case ',':
			if depth == 0 {
				return
			}
		case ' ', '\t', '\n', '\r':
		default:
			if depth == 0 { // a number, true, false or null
				for d.pos < len(d.data) && !strings.ContainsRune(",]} \t\n\r", rune(d.data[d.pos])) {
					d.pos++
				}
				return
			}
		}
		d.pos++
	}
}

// skipRest moves past the rest of the array or object being read, up to and including its
// closing byte end.
func (d *filterDecoder) skipRest(end byte) {
	for d.space(); d.pos < len(d.data) && d.data[d.pos] != end; d.space() {
		if d.data[d.pos] == ',' {
			d.pos++
			continue
		}
		d.skip()
	}
	d.pos++
}
