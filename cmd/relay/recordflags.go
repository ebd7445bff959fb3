package main

import (
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/relayrt/relay/record"
)

// recordFlags are the flags that turn on recording, shared by supervise and bridge.
type recordFlags struct {
	path, redact, max *string
}

func addRecordFlags(fs *flag.FlagSet, what string) *recordFlags {
	return &recordFlags{
		path:   fs.String("record", "", what),
		redact: fs.String("redact", "", "comma-separated JSON pointers (RFC 6901) whose values are recorded as \"[redacted]\", e.g. /params/arguments/password"),
		max:    fs.String("record-max", "64MiB", "size past which a recording is rotated once (FILE -> FILE.1, replacing an older FILE.1): bytes, or with KiB, MiB or GiB; 0 for no cap"),
	}
}

// options turns the flags into a recorder's options; the error says which flag is wrong.
func (f *recordFlags) options() (*record.Options, error) {
	ps, err := record.ParsePointers(*f.redact)
	if err != nil {
		return nil, fmt.Errorf("-redact: %w", err)
	}
	if len(ps) > 0 && *f.path == "" {
		return nil, fmt.Errorf("-redact is only for a recording: add --record")
	}
	n, err := parseSize(*f.max)
	if err != nil {
		return nil, fmt.Errorf("-record-max %q: want a size such as 64MiB, 500KiB or 1000000", *f.max)
	}
	if n == 0 {
		n = -1 // no cap
	}
	return &record.Options{Redact: ps, MaxBytes: n}, nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size")
	}
	return n * mult, nil
}
