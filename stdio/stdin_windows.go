package stdio

import "os"

// pollableStdin returns os.Stdin as it is: since Go 1.26, closing an *os.File that holds a
// pipe handle calls CancelIoEx before closing it (internal/poll's FD.Close), which ends a
// ReadFile blocked on it in another goroutine, so the reader actor's Close on cancellation
// stops it without switching stdin to overlapped I/O.
func pollableStdin() *os.File { return os.Stdin }
