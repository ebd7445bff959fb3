package supervise

import (
	"strings"
	"testing"
)

func TestBatchCommandLine(t *testing.T) {
	const comspec = `C:\Windows\system32\cmd.exe`
	line, err := batchCommandLine(comspec, `C:\Program Files\nodejs\npx.cmd`,
		[]string{"-y", "@modelcontextprotocol/server-filesystem", `C:\Users\Ana Lu\My Docs\`, "a&b|c<d>e^f(g)", "!x!"})
	if err != nil {
		t.Fatal(err)
	}
	want := `"C:\Windows\system32\cmd.exe" /d /v:off /s /c ""C:\Program Files\nodejs\npx.cmd" "-y" "@modelcontextprotocol/server-filesystem" "C:\Users\Ana Lu\My Docs\\" "a&b|c<d>e^f(g)" "!x!""`
	if line != want {
		t.Errorf("line =\n%s\nwant\n%s", line, want)
	}
	for _, bad := range []string{`say "hi"`, "%PATH%", "a\nb", "a\rb"} {
		if _, err := batchCommandLine(comspec, "npx.cmd", []string{bad}); err == nil || !strings.Contains(err.Error(), "cmd.exe") {
			t.Errorf("argument %q: err = %v, want a refusal that names cmd.exe", bad, err)
		}
	}
}

func TestIsBatch(t *testing.T) {
	for path, want := range map[string]bool{
		`C:\nodejs\npx.cmd`: true, `C:\x\RUN.BAT`: true, `C:\nodejs\node.exe`: false, "/usr/bin/npx": false, "cmd": false,
	} {
		if got := isBatch(path); got != want {
			t.Errorf("isBatch(%q) = %v", path, got)
		}
	}
}
