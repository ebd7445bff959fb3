package stdio

import (
	"fmt"
	"os"
)

// protect is ProtectStdout's order of steps on every OS: keep a private copy of stdout for
// frames, then point stdout at stderr (point returns how to point it back). If pointing fails
// the copy is closed and stdout is left as it was. restore points stdout back first and
// closes the copy last, so that stdout is never left pointing at a closed copy.
func protect(keep func() (*os.File, error), point func() (back func(), err error)) (proto *os.File, restore func(), err error) {
	proto, err = keep()
	if err != nil {
		return nil, nil, fmt.Errorf("stdio: cannot duplicate stdout to protect it: %w", err)
	}
	back, err := point()
	if err != nil {
		proto.Close()
		return nil, nil, fmt.Errorf("stdio: cannot point stdout at stderr: %w", err)
	}
	return proto, func() {
		back()
		proto.Close()
	}, nil
}
