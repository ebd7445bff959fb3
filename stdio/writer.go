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
	var werr error
	buf := make([]byte, 0, 64<<10)
	for f := range frames {
		buf = appendFrame(buf[:0], f, log)
		if release != nil {
			release(f)
		}
	more:
		for len(buf) < maxCoalesce {
			select {
			case f, ok := <-frames:
				if !ok {
					break more
				}
				buf = appendFrame(buf, f, log)
				if release != nil {
					release(f)
				}
			default:
				break more
			}
		}
		if werr != nil || len(buf) == 0 {
			continue
		}
		if _, err := w.Write(buf); err != nil {
			werr = err
			log.Error("cannot write to the protocol output; discarding further frames", zap.Error(err))
			failed(err)
		}
		if cap(buf) > 4*maxCoalesce {
			buf = make([]byte, 0, 64<<10) // do not keep a huge buffer after one huge frame
		}
	}
	return werr
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
