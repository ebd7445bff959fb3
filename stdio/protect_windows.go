package stdio

import (
	"os"

	"golang.org/x/sys/windows"
)

// ProtectStdout keeps a private, non-inheritable duplicate of the standard output handle for
// protocol frames and points the standard output handle and os.Stdout (and so fmt.Println) at
// stderr, so that nothing but frames can reach the peer. restore undoes both. An *os.File for
// stdout taken before the call, and the C runtime's own descriptor 1, still reach the real
// stdout. ServeStdio does this itself; programs that write protocol frames some other way (a
// proxy, say) call it directly.
func ProtectStdout() (proto *os.File, restore func(), err error) {
	var out windows.Handle
	return protect(func() (*os.File, error) {
		var err error
		if out, err = windows.GetStdHandle(windows.STD_OUTPUT_HANDLE); err != nil {
			return nil, err
		}
		self := windows.CurrentProcess()
		var dup windows.Handle
		if err := windows.DuplicateHandle(self, out, self, &dup, 0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(dup), "protocol-stdout"), nil
	}, func() (func(), error) {
		errh, err := windows.GetStdHandle(windows.STD_ERROR_HANDLE)
		if err == nil {
			err = windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, errh)
		}
		if err != nil {
			return nil, err
		}
		stdout := os.Stdout
		os.Stdout = os.Stderr
		return func() {
			os.Stdout = stdout
			_ = windows.SetStdHandle(windows.STD_OUTPUT_HANDLE, out)
		}, nil
	})
}
