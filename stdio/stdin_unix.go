//go:build unix

package stdio

import (
	"os"
	"syscall"
)

// pollableStdin returns stdin as a file whose reads can be interrupted by Close: a pipe or a
// socket is switched to non-blocking mode so that Go's poller owns it. A terminal or a
// regular file is left as it is.
func pollableStdin() *os.File {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return os.Stdin
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO, syscall.S_IFSOCK:
		if err := syscall.SetNonblock(0, true); err != nil {
			return os.Stdin // stays blocking: a read then ends only with input
		}
		return os.NewFile(0, "/dev/stdin")
	}
	return os.Stdin
}
