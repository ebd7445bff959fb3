package bridge

import (
	"github.com/relayrt/relay/record"
)

// FrameRecorder records the frames between the bridge and one child's proxy core: what the
// bridge sends the child (record.In) and what the child says (record.Out). A *record.Recorder
// is one.
type FrameRecorder interface {
	Record(dir record.Dir, frame []byte) error
	Close() error
}

// tap puts rec between a child's channels and its core, recording frames in the order they
// pass. Its two copiers end when their source is closed: in by the childConn's close (or,
// the core having returned, when done is closed), and the core's output when the core
// returns. rec is closed once both have ended.
func tap(rec FrameRecorder, in <-chan []byte, out chan<- []byte, done <-chan struct{}) (coreIn <-chan []byte, coreOut chan<- []byte) {
	toCore, fromCore := make(chan []byte), make(chan []byte, cap(out))
	inDone := make(chan struct{})
	go func() { // the input's copier
		defer close(inDone)
		defer close(toCore)
		for {
			select {
			case f, ok := <-in:
				if !ok {
					return
				}
				rec.Record(record.In, f) // an error stops the recording, not the child: see Recorder.Err
				select {
				case toCore <- f:
				case <-done:
					return
				}
			case <-done:
				return
			}
		}
	}()
	go func() { // the output's copier
		defer func() { <-inDone; rec.Close() }()
		defer close(out) // first: the childConn's actor ends, done is closed, the input's copier ends
		for f := range fromCore {
			rec.Record(record.Out, f)
			out <- f
		}
	}()
	return toCore, fromCore
}
