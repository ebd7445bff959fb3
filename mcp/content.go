package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Content is one item of a tool result or a prompt message: *TextContent, *ImageContent,
// *AudioContent, *ResourceLink or *EmbeddedResource; and, as a client reads it,
// *UnknownContent.
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

// UnknownContent is a content block of a type this package does not know, one a later
// revision or an extension defines, as DecodeContent keeps it rather than fail the result
// that holds it: Type is its "type", Raw the whole block as it came, Meta its _meta. It is
// for reading: written, it is a block of its type and _meta only.
type UnknownContent struct {
	Type string
	Raw  json.RawMessage
	Meta map[string]any
}

func (c *UnknownContent) wire() contentWire {
	return contentWire{Type: c.Type, Meta: c.Meta}
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

// SamplingContent is one block of a sampling message (sampling/createMessage, 2025-11-25 and
// 2026-07-28 schema SamplingMessageContentBlock): *TextContent, *ImageContent, *AudioContent,
// *ToolUseContent or *ToolResultContent. The last two exist only in sampling with tools; they
// are not Content, so a tool result or a prompt cannot carry them.
type SamplingContent interface {
	samplingBlock() any
}

func (c *TextContent) samplingBlock() any  { return c.wire() }
func (c *ImageContent) samplingBlock() any { return c.wire() }
func (c *AudioContent) samplingBlock() any { return c.wire() }

// ToolUseContent is the model asking to call a tool, in an assistant message of a sampling
// conversation: the server runs the tool and answers with a *ToolResultContent of the same ID.
type ToolUseContent struct {
	ID    string          // unique among the conversation's tool uses
	Name  string          // the tool, one of CreateMessageParams.Tools
	Input json.RawMessage // the arguments, a JSON object; nil sends {}
	Meta  map[string]any  // the client may need it back: echo it in later requests
}

// ToolResultContent is the result of a tool the model asked for, in the user message that
// follows the tool use. Such a message holds tool results and nothing else.
type ToolResultContent struct {
	ToolUseID         string    // the ID of the ToolUseContent it answers
	Content           []Content // what the tool returned, as in a CallToolResult
	StructuredContent any       // an object, when the tool has an output schema
	IsError           bool      // the tool failed; Content says how
	Meta              map[string]any
}

type toolUseWire struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	Meta  map[string]any  `json:"_meta,omitempty"`
}

type toolResultWire struct {
	Type              string         `json:"type"`
	ToolUseID         string         `json:"toolUseId"`
	Content           []contentWire  `json:"content"`
	StructuredContent any            `json:"structuredContent,omitempty"`
	IsError           bool           `json:"isError,omitempty"`
	Meta              map[string]any `json:"_meta,omitempty"`
}

func (c *ToolUseContent) samplingBlock() any {
	in := c.Input
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	return toolUseWire{"tool_use", c.ID, c.Name, in, c.Meta}
}

func (c *ToolResultContent) samplingBlock() any {
	return toolResultWire{"tool_result", c.ToolUseID, wireContents(c.Content), c.StructuredContent, c.IsError, c.Meta}
}

// NewSamplingMessage returns a sampling message of role "user" or "assistant" holding blocks:
// one block is sent as an object, several as an array, as the schema allows.
func NewSamplingMessage(role string, blocks ...SamplingContent) SamplingMessage {
	var raw []byte
	if len(blocks) == 1 {
		raw, _ = json.Marshal(blocks[0].samplingBlock())
	} else {
		wire := make([]any, len(blocks))
		for i, b := range blocks {
			wire[i] = b.samplingBlock()
		}
		raw, _ = json.Marshal(wire)
	}
	return SamplingMessage{Role: role, Content: raw}
}

// DecodeSamplingContent reads the content of a sampling message or of a CreateMessageResult,
// one block or an array of them. A block of a type it does not know is an error naming it.
func DecodeSamplingContent(raw json.RawMessage) ([]SamplingContent, error) {
	var items []json.RawMessage
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return nil, fmt.Errorf("mcp: sampling content is not an array of blocks: %w", err)
		}
	} else {
		items = []json.RawMessage{raw}
	}
	out := make([]SamplingContent, 0, len(items))
	for i, it := range items {
		var w struct {
			Type              string            `json:"type"`
			ID                string            `json:"id"`
			Name              string            `json:"name"`
			Input             json.RawMessage   `json:"input"`
			ToolUseID         string            `json:"toolUseId"`
			Content           []json.RawMessage `json:"content"`
			StructuredContent any               `json:"structuredContent"`
			IsError           bool              `json:"isError"`
			Meta              map[string]any    `json:"_meta"`
		}
		if err := json.Unmarshal(it, &w); err != nil {
			return nil, fmt.Errorf("mcp: sampling content block %d is malformed: %w", i, err)
		}
		switch w.Type {
		case "text", "image", "audio": // the content blocks sampling shares with tool results
			c, err := decodeContent(it)
			if err != nil {
				return nil, fmt.Errorf("mcp: sampling content block %d: %w", i, err)
			}
			out = append(out, c.(SamplingContent))
		case "tool_use":
			out = append(out, &ToolUseContent{ID: w.ID, Name: w.Name, Input: w.Input, Meta: w.Meta})
		case "tool_result":
			inner := make([]Content, 0, len(w.Content))
			for j, c := range w.Content {
				ic, err := decodeContent(c)
				if err != nil {
					return nil, fmt.Errorf("mcp: tool_result %d, content %d: %w", i, j, err)
				}
				inner = append(inner, ic)
			}
			out = append(out, &ToolResultContent{ToolUseID: w.ToolUseID, Content: inner,
				StructuredContent: w.StructuredContent, IsError: w.IsError, Meta: w.Meta})
		default:
			return nil, fmt.Errorf("mcp: sampling content block %d has unknown type %q", i, w.Type)
		}
	}
	return out, nil
}

// decodeContent reads one ContentBlock (text, image, audio, resource_link, resource); a
// block of another type is an error.
func decodeContent(raw json.RawMessage) (Content, error) {
	c, err := DecodeContent(raw)
	if u, ok := c.(*UnknownContent); ok {
		return nil, fmt.Errorf("unknown content type %q", u.Type)
	}
	return c, err
}

// DecodeContent reads one content block (MCP 2025-11-25 and 2026-07-28 schema ContentBlock:
// text, image, audio, resource_link, resource) as a client receives it, in a tool result or
// a prompt message. A block of a type it does not know is an *UnknownContent: a client
// keeps the result, and the blocks it can read, when a server sends a kind of block newer
// than the client. A malformed block, or a "resource" block without its resource, is an
// error.
func DecodeContent(raw json.RawMessage) (Content, error) {
	var w struct {
		Type        string       `json:"type"`
		Text        string       `json:"text"`
		Data        []byte       `json:"data"`
		MimeType    string       `json:"mimeType"`
		URI         string       `json:"uri"`
		Name        string       `json:"name"`
		Title       string       `json:"title"`
		Description string       `json:"description"`
		Annotations *Annotations `json:"annotations"`
		Resource    *struct {
			URI      string         `json:"uri"`
			MimeType string         `json:"mimeType"`
			Text     string         `json:"text"`
			Blob     []byte         `json:"blob"`
			Meta     map[string]any `json:"_meta"`
		} `json:"resource"`
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("malformed content block: %w", err)
	}
	switch w.Type {
	case "text":
		return &TextContent{Text: w.Text, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "image":
		return &ImageContent{Data: w.Data, MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "audio":
		return &AudioContent{Data: w.Data, MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "resource_link":
		return &ResourceLink{URI: w.URI, Name: w.Name, Title: w.Title, Description: w.Description,
			MimeType: w.MimeType, Annotations: w.Annotations, Meta: w.Meta}, nil
	case "resource":
		if w.Resource == nil {
			return nil, errors.New(`a "resource" block needs a resource`)
		}
		r := w.Resource
		return &EmbeddedResource{Resource: &ResourceContents{URI: r.URI, MimeType: r.MimeType, Text: r.Text, Blob: r.Blob, Meta: r.Meta},
			Annotations: w.Annotations, Meta: w.Meta}, nil
	}
	return &UnknownContent{Type: w.Type, Raw: append(json.RawMessage(nil), raw...), Meta: w.Meta}, nil
}
