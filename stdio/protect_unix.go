//go:build unix

package stdio

import (
	"fmt"
	"os"
	"syscall"
)

// ProtectStdout moves the real stdout to a private descriptor for protocol frames and points
// descriptor 1 (and so os.Stdout, fmt.Println and C code) at stderr, so that nothing but
// frames can reach the peer. restore undoes it. ServeStdio does this itself; programs that
// write protocol frames some other way (a proxy, say) call it directly.
func ProtectStdout() (proto *os.File, restore func(), err error) {
	syscall.ForkLock.Lock()
	fd, err := syscall.Dup(1)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("stdio: cannot duplicate stdout to protect it: %w", err)
	}
	if err := dup2(2, 1); err != nil {
		syscall.Close(fd)
		return nil, nil, fmt.Errorf("stdio: cannot point stdout at stderr: %w", err)
	}
	proto = os.NewFile(uintptr(fd), "protocol-stdout")
	return proto, func() {
		_ = dup2(fd, 1)
		proto.Close()
	}, nil
}
