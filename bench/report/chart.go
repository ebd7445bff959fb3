package main

import (
	"fmt"
	"html"
	"io"
)

// writeChart draws one panel per row of the stdio table (memory aside) with one bar per
// server. Every bar is the server's speed as a share of the limit's (for latency and time,
// limit ÷ value), so that the panels share one scale; the label says the measured value.
func writeChart(w io.Writer, res results) {
	const width, left, barW, barH, gap, panelGap = 860, 190, 520, 18, 4, 34
	colors := map[string]string{"relay": "#2563eb", "gosdk": "#10b981", "mcpgo": "#f59e0b", "ts": "#ef4444", "limit": "#9ca3af"}
	panels := rows[:4]
	height := 50 + len(panels)*(panelGap+len(servers)*(barH+gap))
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprint(w, `<rect width="100%" height="100%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="22" font-size="14" font-weight="bold">Share of the machine's limit (longer is better)</text>`+"\n", left)
	y := 50
	for _, r := range panels {
		limit, ok := r.value(res, "limit")
		fmt.Fprintf(w, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y, html.EscapeString(r.title))
		y += 8
		for _, s := range servers {
			v, have := r.value(res, s.key)
			fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH-5, html.EscapeString(s.title))
			if !have || !ok || v == 0 {
				fmt.Fprintf(w, `<text x="%d" y="%d" fill="#666">not measured</text>`+"\n", left, y+barH-5)
				y += barH + gap
				continue
			}
			share := v / limit
			if !r.higherIsBetter {
				share = limit / v
			}
			length := max(1, int(float64(barW)*min(share, 1.1)))
			fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, length, barH, colors[s.key])
			label := fmt.Sprintf("%s (%.0f %%)", r.format(v), 100*share)
			if s.key == "limit" && r.ideal != 0 {
				label = r.format(v) + " (the ideal)"
			}
			fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", left+length+6, y+barH-5, html.EscapeString(label))
			y += barH + gap
		}
		y += panelGap - 8
	}
	fmt.Fprintln(w, "</svg>")
}
