package crawler

import "bytes"

// hasScripts reports whether the page holds a script element: with almost
// no links, a sign that its links are built by JavaScript (Task.Scripted).
func hasScripts(html []byte) bool {
	for rest := html; ; {
		i := bytes.Index(rest, []byte("<"))
		if i < 0 || len(rest)-i < 7 {
			return false
		}
		if bytes.EqualFold(rest[i+1:i+7], []byte("script")) {
			return true
		}
		rest = rest[i+1:]
	}
}
