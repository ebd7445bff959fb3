package httpx

import (
	"encoding/json"
	"testing"
)

func TestHeaderMatches_DIGEST_A13(t *testing.T) {
	cases := []struct {
		rule, typ, header, value string
		want                     bool
	}{
		{"strings compare as-is", "string", "eu-west", `"eu-west"`, true},
		{"strings differ", "string", "eu-east", `"eu-west"`, false},
		{"the base64 form is decoded first", "string", "=?base64?w6lsw6h2ZQ==?=", `"élève"`, true},
		{"a broken base64 form never matches", "string", "=?base64?***?=", `"x"`, false},
		{"integers compare numerically (42 equals 42.0)", "integer", "42", `42.0`, true},
		{"integers differ", "integer", "41", `42`, false},
		{"booleans are true or false", "boolean", "true", `true`, true},
		{"booleans differ", "boolean", "false", `true`, false},
	}
	for _, tc := range cases {
		if got := headerMatches(tc.typ, tc.header, json.RawMessage(tc.value)); got != tc.want {
			t.Errorf("%s: headerMatches(%s, %q, %s) = %v", tc.rule, tc.typ, tc.header, tc.value, got)
		}
	}
}
