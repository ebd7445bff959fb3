package main

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"unicode/utf8"
)

// writeSVG draws two panels — throughput and p50 latency per window — with one bar per
// server in each group, the mean of its rounds, and a legend under them, one server a line.
func writeSVG(w io.Writer, rows []benchRow, names map[string]string) {
	c := &svgCanvas{w: w}
	drawBench(c, rows, names)
}

// drawBench lays the chart out on c. Every position follows from what comes before it, so
// that nothing is drawn over anything else whatever the number of servers and windows (see
// TestBenchSVG_NothingOverlaps).
func drawBench(c *svgCanvas, rows []benchRow, names map[string]string) {
	var windows []int
	servers := []string{}
	for _, r := range rows {
		if !slices.Contains(windows, r.InFlight) {
			windows = append(windows, r.InFlight)
		}
		if !slices.Contains(servers, r.Server) {
			servers = append(servers, r.Server)
		}
	}
	avg := func(server string, window int, pick func(benchRow) float64) float64 {
		var sum float64
		var n int
		for _, r := range rows {
			if r.Server == server && r.InFlight == window {
				sum += pick(r)
				n++
			}
		}
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	const (
		width, panelH, top, left = 760, 260, 40, 70
		axisGap                  = 16 // from the axis to its labels' baseline
		legendLine               = 18
		valueSize                = 10
	)
	colors := []string{"#2563eb", "#f59e0b", "#10b981", "#ef4444"}
	panels := []struct {
		title string
		pick  func(benchRow) float64
	}{
		{"throughput (requests/s, higher is better)", func(r benchRow) float64 { return r.PerSecond }},
		{"p50 latency (µs, lower is better)", func(r benchRow) float64 { return r.P50us }},
	}
	// Each panel: its title over it, the plot, its axis labels under it, then the gap to
	// the next one's title; the legend under the last.
	const stride = panelH + axisGap + top
	legendTop := top + (len(panels)-1)*stride + panelH + axisGap + 12
	c.height = legendTop + len(servers)*legendLine + 8
	c.width = width
	fmt.Fprintf(c.w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", c.width, c.height)
	fmt.Fprintf(c.w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for p, panel := range panels {
		y0 := float64(top + p*stride)
		base := y0 + panelH
		var peak float64
		for _, s := range servers {
			for _, win := range windows {
				peak = max(peak, avg(s, win, panel.pick))
			}
		}
		if peak == 0 {
			peak = 1
		}
		c.text(left, y0-12, 12, "start", `font-weight="bold"`, panel.title)
		fmt.Fprintf(c.w, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#999"/>`+"\n", left, base, width-20, base)
		groupW := float64(width-left-40) / float64(len(windows))
		barW := groupW * 0.7 / float64(max(len(servers), 1))
		for g, win := range windows {
			gx := float64(left) + float64(g)*groupW + groupW*0.15
			c.text(gx+groupW*0.35, base+axisGap, 12, "middle", "", "inflight "+strconv.Itoa(win))
			for i, s := range servers {
				v := avg(s, win, panel.pick)
				h := float64(panelH-20) * v / peak
				x := gx + float64(i)*barW
				c.rect(x, base-h, barW-2, h, colors[i%len(colors)])
				// The value over its bar, when it fits the bar's width: a narrower bar's
				// value would run into its neighbour's.
				if label := compact(v); textWidth(label, valueSize) <= barW-2 {
					c.text(x+barW/2, base-h-3, valueSize, "middle", "", label)
				}
			}
		}
	}
	for i, s := range servers {
		y := float64(legendTop + i*legendLine)
		c.rect(left, y, 12, 12, colors[i%len(colors)])
		c.text(left+16, y+10, 12, "start", "", fit(s+": "+names[s], width-left-16-10, 12))
	}
	fmt.Fprintln(c.w, "</svg>")
}

// compact writes v in at most five characters: 950, 1.25k, 12.3k, 135k, 1.25M.
func compact(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + "M"
	case v >= 1e5:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + "k"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "k"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 2, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// fit cuts s, with an ellipsis, to what textWidth says fits in width at size px.
func fit(s string, width, size float64) string {
	if textWidth(s, size) <= width {
		return s
	}
	r := []rune(s)
	n := max(int(width/(0.6*size))-1, 0)
	return string(r[:min(n, len(r))]) + "…"
}

// svgCanvas writes SVG elements and keeps the box each one covers, for the layout test.
type svgCanvas struct {
	w             io.Writer
	width, height int
	boxes         []svgBox
}

// svgBox is the area an element covers; what names it in a test's failure.
type svgBox struct {
	x0, y0, x1, y1 float64
	what           string
}

func (b svgBox) overlaps(o svgBox) bool {
	return b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1
}

// textWidth estimates the width of s in a sans-serif font of size px: 0.6 em a character,
// wider than most.
func textWidth(s string, size float64) float64 {
	return 0.6 * size * float64(utf8.RuneCountInString(s))
}

// text draws s with its baseline at y, anchored at x ("start" or "middle").
func (c *svgCanvas) text(x, y, size float64, anchor, attrs, s string) {
	w := textWidth(s, size)
	x0 := x
	if anchor == "middle" {
		x0 = x - w/2
	}
	c.boxes = append(c.boxes, svgBox{x0, y - 0.8*size, x0 + w, y + 0.25*size, "text " + strconv.Quote(s)})
	if attrs != "" {
		attrs = " " + attrs
	}
	fmt.Fprintf(c.w, `<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="%s"%s>%s</text>`+"\n", x, y, size, anchor, attrs, html.EscapeString(s))
}

// rect draws a filled rectangle.
func (c *svgCanvas) rect(x, y, w, h float64, fill string) {
	c.boxes = append(c.boxes, svgBox{x, y, x + w, y + h, "rect " + fill})
	fmt.Fprintf(c.w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, y, w, h, fill)
}
