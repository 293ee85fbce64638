package match

import (
	"testing"
)

func FuzzParseTimeControlName(f *testing.F) {
	for _, s := range []string{"5+5", "3|2 d", "0.5+0", "+", "|", " d", "1e9+1", "-1+0", "NaN+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tc, err := parseTimeControlName(s)
		if err != nil {
			return
		}
		if tc.Initial <= 0 || tc.Increment < 0 || tc.Delay < 0 {
			t.Fatalf("%q parsed to %+v", s, tc)
		}
		// The canonical name parses back to the same clock setting.
		back, err := parseTimeControlName(timeControlPB(tc).GetName())
		if err != nil || back != tc {
			t.Fatalf("%q -> %q -> %+v, %v", s, timeControlPB(tc).GetName(), back, err)
		}
	})
}

func FuzzRecordUnmarshal(f *testing.F) {
	f.Add((&record{Status: StatusActive}).marshal())
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r record
		if err := r.unmarshal(b); err != nil {
			return
		}
		var again record
		if err := again.unmarshal(r.marshal()); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
	})
}

func FuzzDecodeStoredReply(f *testing.F) {
	f.Add([]byte("h2-h3\x00"), "h2-h3")
	f.Fuzz(func(t *testing.T, b []byte, move string) {
		_, _ = decodeStoredReply(b, move) // must not panic
	})
}
