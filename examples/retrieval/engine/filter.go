package engine

import (
	"fmt"
	"slices"
)

// filterOperators are the operators this engine evaluates. Every configured field is a
// keyword (an exact string), so the ordered comparisons and contains, which need numbers,
// dates, text or arrays, are not offered.
var filterOperators = []string{"eq", "ne", "in", "nin", "exists"}

// specOperators are all the operators RCP/1 defines (§8); an operator outside this list is
// malformed (-32602), one inside it but not offered is unsupported (-32005).
var specOperators = []string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "exists"}

// checkFilter validates a filter against the configured fields and operators, and against
// MaxFilterDepth, MaxFilterNodes and MaxFilterValues: decoding enforces the first two already,
// and a filter built in Go is held to them too.
func (e *Engine) checkFilter(f *Filter, path string) error {
	if err := filterLimits(f, path, 1, new(filterCount)); err != nil {
		return err
	}
	return e.checkNode(f, path)
}

// filterCount is what filterLimits has counted so far.
type filterCount struct{ nodes, values int }

// filterLimits counts f's nodes and listed values into c and stops at the first beyond a
// limit, so that it costs at most MaxFilterNodes steps whatever f holds.
func filterLimits(f *Filter, path string, depth int, c *filterCount) error {
	if depth > MaxFilterDepth {
		return fieldErr(path, "nests deeper than the limit of %d filters; "+
			"flatten it (and and or take any number of filters)", MaxFilterDepth)
	}
	if c.nodes++; c.nodes > MaxFilterNodes {
		return fieldErr("filter", "holds more than the limit of %d filters; "+
			"split the query, or match a list of values with one in or nin", MaxFilterNodes)
	}
	switch v := f.Value.(type) {
	case []any:
		c.values += len(v)
	case []string:
		c.values += len(v)
	}
	if c.values > MaxFilterValues {
		return fieldErr(path+".value", "takes the values listed in the filter past the limit of %d "+
			"(every document is compared with each); split the query, or filter on a field that "+
			"groups the documents", MaxFilterValues)
	}
	for _, l := range []struct {
		name string
		fs   []Filter
	}{{"and", f.And}, {"or", f.Or}} {
		for i := range l.fs {
			if err := filterLimits(&l.fs[i], fmt.Sprintf("%s.%s[%d]", path, l.name, i), depth+1, c); err != nil {
				return err
			}
		}
	}
	if f.Not != nil {
		return filterLimits(f.Not, path+".not", depth+1, c)
	}
	return nil
}

// checkNode validates one node of a filter and its children.
func (e *Engine) checkNode(f *Filter, path string) error {
	kinds := 0
	if f.And != nil {
		kinds++
	}
	if f.Or != nil {
		kinds++
	}
	if f.Not != nil {
		kinds++
	}
	if f.Field != "" || f.Op != "" {
		kinds++
	}
	if kinds != 1 {
		return fieldErr(path, "must be exactly one of a comparison {field, op, value}, and, or, not")
	}
	switch {
	case f.And != nil:
		return e.checkList(f.And, path+".and")
	case f.Or != nil:
		return e.checkList(f.Or, path+".or")
	case f.Not != nil:
		return e.checkNode(f.Not, path+".not")
	}

	if f.Op == "" {
		return fieldErr(path+".op", "is required")
	}
	if !slices.Contains(specOperators, f.Op) {
		return fieldErr(path+".op", "%q is not an RCP filter operator", f.Op)
	}
	if !slices.Contains(filterOperators, f.Op) {
		return &OptionError{Option: "filter.op", Value: f.Op}
	}
	if f.Field == "" {
		return fieldErr(path+".field", "is required")
	}
	field := "filter." + f.Field
	if !slices.Contains(e.cfg.FilterFields, f.Field) {
		return fieldErr(field, "is not a filterable field")
	}
	switch f.Op {
	case "eq", "ne":
		if _, ok := f.Value.(string); !ok {
			return fieldErr(field, "%s on a keyword field needs a string value", f.Op)
		}
	case "in", "nin":
		if _, ok := stringList(f.Value); !ok {
			return fieldErr(field, "%s on a keyword field needs an array of strings", f.Op)
		}
	case "exists":
		if _, ok := f.Value.(bool); !ok {
			return fieldErr(field, "exists needs a boolean value")
		}
	}
	return nil
}

func (e *Engine) checkList(fs []Filter, path string) error {
	if len(fs) == 0 {
		return fieldErr(path, "must not be empty")
	}
	for i := range fs {
		if err := e.checkNode(&fs[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// anyString reports whether fn holds for a string of list, a decoded JSON array (or a Go
// []string), without copying it: match calls it once per document.
func anyString(list any, fn func(string) bool) bool {
	switch x := list.(type) {
	case []string:
		return slices.ContainsFunc(x, fn)
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && fn(s) {
				return true
			}
		}
	}
	return false
}

// stringList converts a decoded JSON array (or a Go []string) of strings.
func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// match evaluates a validated filter against a document's metadata. A metadata value that
// is an array matches eq and in when any of its elements does; ne and nin match documents
// that lack the field.
func match(f *Filter, meta map[string]any) bool {
	switch {
	case f.And != nil:
		for i := range f.And {
			if !match(&f.And[i], meta) {
				return false
			}
		}
		return true
	case f.Or != nil:
		for i := range f.Or {
			if match(&f.Or[i], meta) {
				return true
			}
		}
		return false
	case f.Not != nil:
		return !match(f.Not, meta)
	}
	v, present := meta[f.Field]
	present = present && v != nil
	switch f.Op {
	case "eq":
		return present && hasString(v, f.Value.(string))
	case "ne":
		return !present || !hasString(v, f.Value.(string))
	case "in", "nin":
		in := present && anyString(f.Value, func(w string) bool { return hasString(v, w) })
		return in == (f.Op == "in")
	case "exists":
		return present == f.Value.(bool)
	}
	return false
}

// hasString reports whether a metadata value is s, or is an array holding s.
func hasString(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return x == s
	case []string:
		return slices.Contains(x, s)
	case []any:
		for _, e := range x {
			if es, ok := e.(string); ok && es == s {
				return true
			}
		}
	}
	return false
}
