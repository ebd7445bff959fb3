package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"go.uber.org/zap"
)

// maxCoalesce bounds how many bytes of queued frames the writer joins into one write.
const maxCoalesce = 1 << 20

// writeLoop is the writer actor: the only owner of w. It takes frames until frames is closed,
// joins whatever is queued into one write (so a busy server makes one syscall for many
// frames, and an idle one flushes each frame at once), and ends every frame with "\n". After
// a write fails it reports the error through failed, keeps taking frames (so that no sender
// ever blocks on a dead output) and discards them. When release is not nil, every frame is
// given to it once copied out, for frames whose memory the sender may reuse.
func writeLoop(w io.Writer, frames <-chan []byte, log *zap.Logger, failed func(error), release func([]byte)) error {
	bw := batchWriter{w: w, log: log, failed: failed, buf: make([]byte, 0, 64<<10)}
	for f := range frames {
		bw.add(f)
		if release != nil {
			release(f)
		}
	more:
		for bw.size() < maxCoalesce {
			select {
			case f, ok := <-frames:
				if !ok {
					break more
				}
				bw.add(f)
				if release != nil {
					release(f)
				}
			default:
				break more
			}
		}
		bw.flush()
	}
	return bw.err
}

// batchWriter is what every writer actor of Relay's does with the frames it takes: each
// becomes one line, compacted if it spans lines and dropped (and logged) if it is not JSON at
// all, and a batch of them goes out in one write. After a write fails it reports the error
// through failed, once, and discards what it is given.
type batchWriter struct {
	w      io.Writer
	log    *zap.Logger
	failed func(error)
	buf    []byte
	err    error
}

func (b *batchWriter) add(f []byte) { b.buf = appendFrame(b.buf, f, b.log) }

func (b *batchWriter) size() int { return len(b.buf) }

// flush writes the batch.
func (b *batchWriter) flush() {
	defer func() {
		b.buf = b.buf[:0]
		if cap(b.buf) > 4*maxCoalesce {
			b.buf = make([]byte, 0, 64<<10) // do not keep a huge buffer after one huge frame
		}
	}()
	if b.err != nil || len(b.buf) == 0 {
		return
	}
	if _, err := b.w.Write(b.buf); err != nil {
		b.err = err
		b.log.Error("cannot write to the protocol output; discarding further frames", zap.Error(err))
		b.failed(err)
	}
}

var errEmptyFrame = errors.New("stdio: empty frame")

// WriteFrames is the writer actor for programs that produce frames other than through a
// runtime.Server (a proxy, say): every frame becomes one line of w, whatever is queued is
// joined into one write, and it returns once frames is closed. After a failed write it keeps
// taking frames, so that senders never block, and returns the error at the end.
func WriteFrames(w io.Writer, frames <-chan []byte, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	return writeLoop(w, frames, log, func(error) {}, nil)
}

// appendFrame appends f and a newline, compacting f first if it spans lines.
func appendFrame(buf, f []byte, log *zap.Logger) []byte {
	if len(bytes.TrimSpace(f)) == 0 { // no message at all: never write a blank line
		log.Error("dropped an outgoing frame that is not valid JSON", zap.Error(errEmptyFrame))
		return buf
	}
	if bytes.IndexByte(f, '\n') < 0 {
		buf = append(buf, f...)
		return append(buf, '\n')
	}
	mark := len(buf)
	out := bytes.NewBuffer(buf)
	if err := json.Compact(out, f); err != nil {
		log.Error("dropped an outgoing frame that is not valid JSON", zap.Error(err))
		return buf[:mark]
	}
	return append(out.Bytes(), '\n')
}
