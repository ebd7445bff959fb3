package client

import "github.com/relayrt/relay/mcp"

// resourceWire is one item of resources/read's contents: text, or a base64 blob.
type resourceWire struct {
	URI      string         `json:"uri"`
	MimeType string         `json:"mimeType"`
	Text     string         `json:"text"`
	Blob     []byte         `json:"blob"`
	Meta     map[string]any `json:"_meta"`
}

func (w *resourceWire) contents() *mcp.ResourceContents {
	return &mcp.ResourceContents{URI: w.URI, MimeType: w.MimeType, Text: w.Text, Blob: w.Blob, Meta: w.Meta}
}
