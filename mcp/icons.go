package mcp

import (
	"encoding/base64"
	"fmt"
	"net/url"
)

// Icon is an image a client may show for a server, tool, resource, resource template or prompt
// (MCP 2025-11-25 and 2026-07-28, schema Icon). Clients that show icons must support PNG and
// JPEG, and should support SVG and WebP.
type Icon struct {
	// Src is an https or http URL, or a data: URI holding the image (see DataIcon).
	Src string `json:"src"`
	// MimeType overrides the type the source reports, when it reports none or a generic one.
	MimeType string `json:"mimeType,omitempty"`
	// Sizes are the sizes the image suits, "48x48" or "any" (for SVG); none means any size.
	Sizes []string `json:"sizes,omitempty"`
	// Theme is the background the icon is drawn for; empty means either.
	Theme IconTheme `json:"theme,omitempty"`
}

// IconTheme is the background an icon is drawn for.
type IconTheme string

// The themes an icon may be drawn for.
const (
	IconLight IconTheme = "light" // for a light background
	IconDark  IconTheme = "dark"  // for a dark background
)

// DataIcon returns an icon that carries its image in a data: URI, so a client need not fetch
// anything to show it: DataIcon("image/png", png, "48x48").
func DataIcon(mimeType string, image []byte, sizes ...string) Icon {
	return Icon{Src: "data:" + mimeType + ";base64," + base64.StdEncoding.EncodeToString(image),
		MimeType: mimeType, Sizes: sizes}
}

// checkIcons checks the icons of what is being registered: each Src an absolute https, http
// or data: URI, each theme light, dark or none. A bad icon is a programming error, like a bad
// schema, so registration panics with what says which.
func checkIcons(owner string, icons []Icon) {
	for i, ic := range icons {
		u, err := url.Parse(ic.Src)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "data") ||
			(u.Scheme != "data" && u.Host == "") {
			panic(fmt.Sprintf("mcp: icon %d of %s: src %q must be an https, http or data: URI", i, owner, ic.Src))
		}
		if ic.Theme != "" && ic.Theme != IconLight && ic.Theme != IconDark {
			panic(fmt.Sprintf("mcp: icon %d of %s: theme %q must be %q, %q or empty", i, owner, ic.Theme, IconLight, IconDark))
		}
	}
}
