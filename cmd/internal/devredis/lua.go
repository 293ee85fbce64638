package devredis

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"io"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// luaStruct is a pure-Lua stand-in for the struct library real Redis gives
// scripts, limited to packing integers ("<" / ">" byte order, then I, i, L,
// l, H, h, B, b with an optional size in bytes: ">I4"). It is a chunk-local
// table on the script's first line, so line numbers in errors are unchanged.
const luaStruct = `local struct = {pack = function(f, ...) local a, o, big, ai = {...}, {}, true, 1 ` +
	`for op, n in f:gmatch('([<>IiLlHhBb])(%d*)') do ` +
	`if op == '>' then big = true elseif op == '<' then big = false else ` +
	`local size = tonumber(n) or ({B=1, b=1, H=2, h=2, L=4, l=4, I=4, i=4})[op] ` +
	`local v = a[ai] ai = ai + 1 if v < 0 then v = v + 2^(8*size) end ` +
	`local bytes = {} for k = 1, size do bytes[k] = string.char(v % 256) v = math.floor(v / 256) end ` +
	`if big then local r = {} for k = size, 1, -1 do r[#r+1] = bytes[k] end bytes = r end ` +
	`o[#o+1] = table.concat(bytes) end end return table.concat(o) end} `

// addStructLibrary rewrites scripts that use struct.* to carry luaStruct.
// Clients address scripts by the SHA-1 of their own text (EVALSHA, then
// EVAL on NOSCRIPT), so the original digest is mapped to the rewritten
// script's.
func addStructLibrary(m *miniredis.Miniredis) {
	srv := m.Server()
	var mu sync.Mutex
	shas := map[string]string{} // digest of the client's script -> of the rewritten one
	rewrite := func(script string) (string, bool) {
		if !strings.Contains(script, "struct.") || strings.HasPrefix(script, luaStruct) {
			return script, false
		}
		out := luaStruct + script
		mu.Lock()
		shas[digest(script)] = digest(out)
		mu.Unlock()
		return out, true
	}
	srv.SetPreHook(func(c *server.Peer, cmd string, args ...string) bool {
		switch cmd {
		case "EVAL", "EVAL_RO":
			if len(args) > 0 {
				if script, ok := rewrite(args[0]); ok {
					srv.Dispatch(c, append([]string{cmd, script}, args[1:]...))
					return true
				}
			}
		case "EVALSHA", "EVALSHA_RO":
			if len(args) > 0 {
				mu.Lock()
				mapped, ok := shas[strings.ToLower(args[0])]
				mu.Unlock()
				if ok {
					srv.Dispatch(c, append([]string{cmd, mapped}, args[1:]...))
					return true
				}
			}
		case "SCRIPT":
			if len(args) == 2 && strings.EqualFold(args[0], "LOAD") {
				if script, ok := rewrite(args[1]); ok {
					// Load the rewritten script, answer with the digest the
					// client computed for its own text.
					srv.Dispatch(server.NewPeer(bufio.NewWriter(io.Discard)), []string{"SCRIPT", "LOAD", script})
					c.WriteBulk(digest(args[1]))
					return true
				}
			}
		}
		return false
	})
}

func digest(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}
