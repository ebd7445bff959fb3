package record

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// normalize decodes msg and drops what never counts: the top-level id, every _meta, and
// the values at ignore.
func normalize(msg []byte, ignore []Pointer) (any, error) {
	v, err := decode(msg)
	if err != nil {
		return nil, err
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "id")
	}
	dropMeta(v)
	for _, p := range ignore {
		apply(v, p, func(any) (any, bool) { return nil, false })
	}
	return v, nil
}

func dropMeta(v any) {
	switch c := v.(type) {
	case map[string]any:
		delete(c, "_meta")
		for _, e := range c {
			dropMeta(e)
		}
	case []any:
		for _, e := range c {
			dropMeta(e)
		}
	}
}

// Difference is one place where an answer is not what was recorded.
type Difference struct {
	Path      string // a JSON pointer into the message
	Want, Got string // the JSON text of each side; "" when that side has nothing there
}

func (d Difference) String() string {
	switch {
	case d.Want == "":
		return fmt.Sprintf("%s: not recorded, got %s", d.Path, d.Got)
	case d.Got == "":
		return fmt.Sprintf("%s: recorded %s, missing", d.Path, d.Want)
	}
	return fmt.Sprintf("%s: recorded %s, got %s", d.Path, d.Want, d.Got)
}

// MaxDifferences is how many differences Compare lists at most for one message; a
// message that differs everywhere is summed up in one more line.
const MaxDifferences = 20

// Compare returns where got differs from want, two JSON-RPC messages, besides ids, _meta
// and the values at ignore. A message that is not JSON differs as a whole.
func Compare(want, got []byte, ignore []Pointer) []Difference {
	w, err1 := normalize(want, ignore)
	g, err2 := normalize(got, ignore)
	if err1 != nil || err2 != nil {
		if string(want) == string(got) {
			return nil
		}
		return []Difference{{Path: "", Want: short(string(want)), Got: short(string(got))}}
	}
	var ds []Difference
	diff(&ds, "", w, g)
	if len(ds) > MaxDifferences {
		n := len(ds) - MaxDifferences
		ds = append(ds[:MaxDifferences], Difference{Path: "…", Want: fmt.Sprintf("%d more differences", n), Got: "…"})
	}
	return ds
}

func diff(ds *[]Difference, path string, w, g any) {
	if len(*ds) > MaxDifferences {
		return
	}
	switch wv := w.(type) {
	case map[string]any:
		if gv, ok := g.(map[string]any); ok {
			keys := make([]string, 0, len(wv)+len(gv))
			for k := range wv {
				keys = append(keys, k)
			}
			for k := range gv {
				if _, ok := wv[k]; !ok {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			for _, k := range keys {
				p := path + Pointer{k}.String()
				we, inW := wv[k]
				ge, inG := gv[k]
				switch {
				case !inW:
					*ds = append(*ds, Difference{Path: p, Got: text(ge)})
				case !inG:
					*ds = append(*ds, Difference{Path: p, Want: text(we)})
				default:
					diff(ds, p, we, ge)
				}
			}
			return
		}
	case []any:
		if gv, ok := g.([]any); ok && len(gv) == len(wv) {
			for i := range wv {
				diff(ds, fmt.Sprintf("%s/%d", path, i), wv[i], gv[i])
			}
			return
		}
	}
	if wt, gt := text(w), text(g); wt != gt {
		if path == "" {
			path = "/"
		}
		*ds = append(*ds, Difference{Path: path, Want: wt, Got: gt})
	}
}

func text(v any) string {
	b, _ := json.Marshal(v)
	return short(string(b))
}

// short cuts a value to what a diff line can show.
func short(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Summary is a compact text of a message for a report: its method or, for an answer, the
// start of its result or error.
func Summary(msg []byte) string {
	return short(strings.TrimSpace(string(msg)))
}

// Matches reports whether params, a request's, match recorded, the params of a recorded
// request: equal but for _meta, with a recorded "[redacted]" matching any value (a secret
// taken out of a recording still lets the request it was in be recognised).
func Matches(recorded, params json.RawMessage) bool {
	norm := func(b json.RawMessage) (any, bool) {
		if len(b) == 0 || string(b) == "null" {
			return map[string]any{}, true
		}
		v, err := decode(b)
		if err != nil {
			return nil, false
		}
		dropMeta(v)
		return v, true
	}
	r, ok1 := norm(recorded)
	p, ok2 := norm(params)
	return ok1 && ok2 && matches(r, p)
}

func matches(r, p any) bool {
	switch rv := r.(type) {
	case string:
		if rv == Redacted {
			return true
		}
	case map[string]any:
		pv, ok := p.(map[string]any)
		if !ok || len(pv) != len(rv) {
			return false
		}
		for k, e := range rv {
			pe, ok := pv[k]
			if !ok || !matches(e, pe) {
				return false
			}
		}
		return true
	case []any:
		pv, ok := p.([]any)
		if !ok || len(pv) != len(rv) {
			return false
		}
		for i := range rv {
			if !matches(rv[i], pv[i]) {
				return false
			}
		}
		return true
	}
	return text(r) == text(p)
}
