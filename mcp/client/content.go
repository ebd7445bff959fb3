package client

import "github.com/relayrt/relay/mcp"

// contentWire is a ContentBlock as it arrives (MCP 2026-07-28, Server › Tools › content).
type contentWire struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Data        []byte           `json:"data"`
	MimeType    string           `json:"mimeType"`
	URI         string           `json:"uri"`
	Name        string           `json:"name"`
	Title       string           `json:"title"`
	Description string           `json:"description"`
	Resource    *resourceWire    `json:"resource"`
	Annotations *mcp.Annotations `json:"annotations"`
	Meta        map[string]any   `json:"_meta"`
}

// content returns the block as package mcp's type; an unknown type becomes text holding
// nothing but its annotations and _meta.
func (w *contentWire) content() mcp.Content {
	switch w.Type {
	case "image":
		return &mcp.ImageContent{Data: w.Data, MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}
	case "audio":
		return &mcp.AudioContent{Data: w.Data, MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}
	case "resource_link":
		return &mcp.ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description,
			MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}
	case "resource":
		var rc *mcp.ResourceContents
		if w.Resource != nil {
			rc = w.Resource.contents()
		}
		return &mcp.EmbeddedResource{Resource: rc, Annotations: w.Annotations, Meta: w.Meta}
	}
	return &mcp.TextContent{Text: w.Text, Annotations: w.Annotations, Meta: w.Meta}
}

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
