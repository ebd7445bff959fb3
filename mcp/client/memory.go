package client

import (
	"context"

	"github.com/relayrt/relay/runtime"
)

// MemoryTransport connects to a server in the same process, through runtime.Server's
// in-memory connection: what tests use. For an mcp.Server s, Server is s.Runtime().
type MemoryTransport struct {
	Server *runtime.Server
}

func (t *MemoryTransport) dial(ctx context.Context, in *inbox) (conn, error) {
	c := t.Server.Connect(context.Background())
	frames := make(chan []byte, 16)
	readerDone := make(chan struct{})
	s := newStream(frames, in)
	go func() { // the reader actor: until the server stopped and everything was received
		defer close(readerDone)
		defer close(frames)
		for {
			f, err := c.Receive(context.Background())
			if err != nil {
				return
			}
			frames <- f
		}
	}()
	writerDone := make(chan struct{})
	go func() { // the writer actor: its end is the server's end of input
		defer close(writerDone)
		for f := range s.out {
			c.Send(context.Background(), f)
		}
		c.CloseInput()
	}()
	s.stop = func() error {
		<-writerDone
		<-readerDone
		return c.Close()
	}
	return s, nil
}
