//go:build unix

package stdio

import (
	"os"
	"syscall"
)

// ProtectStdout moves the real stdout to a private descriptor for protocol frames and points
// descriptor 1 (and so os.Stdout, fmt.Println and C code) at stderr, so that nothing but
// frames can reach the peer. restore undoes it. ServeStdio does this itself; programs that
// write protocol frames some other way (a proxy, say) call it directly.
//
// On Windows the private copy is a duplicate of the standard output handle, and the standard
// output handle and os.Stdout are pointed at stderr.
func ProtectStdout() (proto *os.File, restore func(), err error) {
	var fd int
	return protect(func() (*os.File, error) {
		syscall.ForkLock.Lock()
		defer syscall.ForkLock.Unlock()
		var err error
		if fd, err = syscall.Dup(1); err != nil {
			return nil, err
		}
		syscall.CloseOnExec(fd)
		return os.NewFile(uintptr(fd), "protocol-stdout"), nil
	}, func() (func(), error) {
		if err := dup2(2, 1); err != nil {
			return nil, err
		}
		return func() { _ = dup2(fd, 1) }, nil
	})
}
