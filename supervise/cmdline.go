package supervise

import (
	"fmt"
	"strings"
)

// Windows runs a .cmd or .bat file (npx is npx.cmd there) only through cmd.exe, whose
// parsing of a command line is not the one every other program uses: a quote toggles its
// quoting, and %NAME% is expanded even inside quotes. batchCommandLine builds the line for
// cmd.exe /c that runs script with args as written, and refuses an argument that cmd.exe
// would reinterpret whatever the quoting; the code is portable so that every OS tests it.

// isBatch reports whether Windows needs cmd.exe to run path.
func isBatch(path string) bool {
	p := strings.ToLower(path)
	return strings.HasSuffix(p, ".cmd") || strings.HasSuffix(p, ".bat")
}

// batchCommandLine returns the command line that has cmd.exe (comspec) run script with args:
// `"comspec" /d /v:off /s /c ""script" "arg" ..."`. /d skips AutoRun commands, /v:off keeps
// ! literal, /s strips exactly the outer quotes.
func batchCommandLine(comspec, script string, args []string) (string, error) {
	var b strings.Builder
	b.WriteString(`"` + comspec + `" /d /v:off /s /c "`)
	for i, a := range append([]string{script}, args...) {
		if strings.ContainsAny(a, "\"%\r\n\x00") {
			return "", fmt.Errorf("argument %q holds a character that cmd.exe cannot pass to %s unchanged (\", %%, or a line break): run the program the script wraps directly (node, say)", a, script)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(a)
		// The script usually hands its arguments to a program that reads them by the C
		// runtime's rules, where backslashes before a quote escape it: double them.
		b.WriteString(strings.Repeat(`\`, len(a)-len(strings.TrimRight(a, `\`))))
		b.WriteByte('"')
	}
	b.WriteByte('"')
	return b.String(), nil
}
