package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// The chart's boxes (bars, their values, axis labels, titles, the legend) never overlap,
// and all are inside the picture, whatever the number of servers and windows and however
// long the servers' names: the legend once sat on the second panel's axis labels, and ran
// off the right edge from the third server on.
func TestBenchSVG_NothingOverlaps(t *testing.T) {
	for _, tc := range []struct{ servers, windows int }{{1, 1}, {2, 3}, {4, 4}, {4, 6}, {3, 2}} {
		t.Run(fmt.Sprintf("servers=%d/windows=%d", tc.servers, tc.windows), func(t *testing.T) {
			var rows []benchRow
			names := map[string]string{}
			for s := range tc.servers {
				server := string(rune('a' + s))
				names[server] = strings.Repeat("node server-"+server+".js --flag ", 1+2*s) + "& <more>"
				for w := range tc.windows {
					for round := range 3 {
						rows = append(rows, benchRow{Server: server, InFlight: 1 << (2 * w), Round: round,
							PerSecond: float64(1000*(s+1)*(w+1)) * 12.345, P50us: float64(17*(s+1)) / float64(w+1)})
					}
				}
			}
			var out bytes.Buffer
			c := &svgCanvas{w: &out}
			drawBench(c, rows, names)
			if err := xml.Unmarshal(out.Bytes(), new(struct{})); err != nil {
				t.Fatalf("not well-formed SVG: %v", err)
			}
			for i, a := range c.boxes {
				if a.x0 < 0 || a.y0 < 0 || a.x1 > float64(c.width) || a.y1 > float64(c.height) {
					t.Errorf("%s at (%.0f,%.0f)-(%.0f,%.0f) is outside the %dx%d picture", a.what, a.x0, a.y0, a.x1, a.y1, c.width, c.height)
				}
				for _, b := range c.boxes[i+1:] {
					if a.overlaps(b) {
						t.Errorf("%s at (%.0f,%.0f)-(%.0f,%.0f) overlaps %s at (%.0f,%.0f)-(%.0f,%.0f)",
							a.what, a.x0, a.y0, a.x1, a.y1, b.what, b.x0, b.y0, b.x1, b.y1)
					}
				}
			}
		})
	}
}
