package mcp

import "encoding/json"

// Content is one item of a tool result or a prompt message: *TextContent, *ImageContent,
// *AudioContent, *ResourceLink or *EmbeddedResource.
type Content interface {
	wire() contentWire
}

// Annotations tell a client how to use a piece of content.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// TextContent is a text item.
type TextContent struct {
	Text        string
	Annotations *Annotations
	Meta        map[string]any
}

// ImageContent is an image; Data holds its bytes (sent as base64).
type ImageContent struct {
	Data        []byte
	MimeType    string
	Annotations *Annotations
	Meta        map[string]any
}

// AudioContent is audio; Data holds its bytes (sent as base64).
type AudioContent struct {
	Data        []byte
	MimeType    string
	Annotations *Annotations
	Meta        map[string]any
}

// ResourceLink points at a resource the client can read.
type ResourceLink struct {
	URI         string
	Name        string
	Title       string
	Description string
	MimeType    string
	Annotations *Annotations
	Meta        map[string]any
}

// EmbeddedResource carries a resource's contents inline.
type EmbeddedResource struct {
	Resource    *ResourceContents
	Annotations *Annotations
	Meta        map[string]any
}

func (c *TextContent) wire() contentWire {
	return contentWire{Type: "text", Text: &c.Text, Annotations: c.Annotations, Meta: c.Meta}
}

func (c *ImageContent) wire() contentWire {
	return contentWire{Type: "image", Data: c.Data, MimeType: c.MimeType, Annotations: c.Annotations, Meta: c.Meta}
}

func (c *AudioContent) wire() contentWire {
	return contentWire{Type: "audio", Data: c.Data, MimeType: c.MimeType, Annotations: c.Annotations, Meta: c.Meta}
}

func (c *ResourceLink) wire() contentWire {
	return contentWire{Type: "resource_link", URI: c.URI, Name: c.Name, Title: c.Title,
		Description: c.Description, MimeType: c.MimeType, Annotations: c.Annotations, Meta: c.Meta}
}

func (c *EmbeddedResource) wire() contentWire {
	return contentWire{Type: "resource", Resource: c.Resource, Annotations: c.Annotations, Meta: c.Meta}
}

// contentWire is the JSON shape shared by every content kind.
type contentWire struct {
	Type        string            `json:"type"`
	Text        *string           `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"`
	MimeType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        map[string]any    `json:"_meta,omitempty"`
}

func wireContents(cs []Content) []contentWire {
	out := make([]contentWire, len(cs))
	for i, c := range cs {
		out[i] = c.wire()
	}
	return out
}

// ResourceContents is what resources/read returns for one resource: text, or binary data
// when Blob is set.
type ResourceContents struct {
	URI      string
	MimeType string
	Text     string
	Blob     []byte
	Meta     map[string]any
}

// MarshalJSON writes "text" or "blob" (base64), never both.
func (rc *ResourceContents) MarshalJSON() ([]byte, error) {
	type common struct {
		URI      string         `json:"uri"`
		MimeType string         `json:"mimeType,omitempty"`
		Meta     map[string]any `json:"_meta,omitempty"`
	}
	if rc.Blob != nil {
		return json.Marshal(struct {
			common
			Blob []byte `json:"blob"`
		}{common{rc.URI, rc.MimeType, rc.Meta}, rc.Blob})
	}
	return json.Marshal(struct {
		common
		Text string `json:"text"`
	}{common{rc.URI, rc.MimeType, rc.Meta}, rc.Text})
}
