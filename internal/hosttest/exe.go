package hosttest

import "runtime"

// Exe returns path, the name a test gives a binary it builds with go build -o, as a file the
// OS will run: with ".exe" added on Windows, where os/exec runs no file without an extension
// (go build -o writes exactly the name it is given).
func Exe(path string) string {
	if runtime.GOOS == "windows" {
		return path + ".exe"
	}
	return path
}
