package watch

import (
	"fmt"
	"regexp"
)

// proxyNameRE is the rule of a proxy's name, the CHECK of pages.proxy: a
// short slug, so that it is safe in a URL, a CSV cell and a log line.
var proxyNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// CheckProxyName reports whether name may name a proxy: 1 to 63 lower-case
// letters, digits, '_' or '-', starting with a letter or digit. The empty
// name, which means no proxy, passes. Whether the deployment has a proxy of
// that name is registration's to judge.
func CheckProxyName(name string) error {
	if name == "" || proxyNameRE.MatchString(name) {
		return nil
	}
	return fmt.Errorf("proxy name %q is not a proxy name: use 1 to 63 lower-case letters, digits, '_' or '-', starting with a letter or digit", name)
}
