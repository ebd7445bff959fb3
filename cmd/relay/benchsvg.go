package main

import (
	"fmt"
	"io"
	"slices"
)

// writeSVG draws two panels — throughput and p50 latency per window — with one bar per
// server in each group, the mean of its rounds.
func writeSVG(w io.Writer, rows []benchRow, names map[string]string) {
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
	const width, panelH, top, left = 760, 260, 40, 70
	colors := []string{"#2563eb", "#f59e0b", "#10b981", "#ef4444"}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, 2*panelH+2*top+30)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	panels := []struct {
		title string
		pick  func(benchRow) float64
		unit  string
	}{
		{"throughput (requests/s, higher is better)", func(r benchRow) float64 { return r.PerSecond }, "req/s"},
		{"p50 latency (µs, lower is better)", func(r benchRow) float64 { return r.P50us }, "µs"},
	}
	for p, panel := range panels {
		y0 := top + p*(panelH+top)
		var peak float64
		for _, s := range servers {
			for _, win := range windows {
				peak = max(peak, avg(s, win, panel.pick))
			}
		}
		if peak == 0 {
			peak = 1
		}
		fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-12, panel.title)
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", left, y0+panelH, width-20, y0+panelH)
		groupW := float64(width-left-40) / float64(len(windows))
		barW := groupW * 0.7 / float64(len(servers))
		for g, win := range windows {
			gx := float64(left) + float64(g)*groupW + groupW*0.15
			fmt.Fprintf(w, `<text x="%.0f" y="%d" text-anchor="middle">inflight %d</text>`+"\n", gx+groupW*0.35, y0+panelH+16, win)
			for i, s := range servers {
				v := avg(s, win, panel.pick)
				h := float64(panelH-20) * v / peak
				x := gx + float64(i)*barW
				fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", x, float64(y0+panelH)-h, barW-2, h, colors[i%len(colors)])
				fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%.0f</text>`+"\n", x+barW/2, float64(y0+panelH)-h-3, v)
			}
		}
	}
	for i, s := range servers {
		y := 2*panelH + 2*top + 12
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s: %s</text>`+"\n",
			left+i*340, y, colors[i%len(colors)], left+i*340+16, y+10, s, names[s])
	}
	fmt.Fprintln(w, "</svg>")
}
