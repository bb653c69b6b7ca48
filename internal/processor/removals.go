package processor

import (
	"github.com/portalwatch/portalwatch/internal/watch"
)

// removals says how the store follows the links that leave the task's page
// (watch.Removals), recorded with the check in one transaction. A check
// with the page's whole link set, not truncated (a link left out over the
// crawler's limits has not left the page), is compared with the previous
// one, and only the links that left or came back are written; any
// successful check at which a pending absence reaches
// Config.RemovalChecks records the removals.
func (s *Service) removals(task watch.Task, check watch.Check, keys []uint64) watch.Removals {
	if s.cfg.RemovalChecks <= 0 || task.Failed() {
		return watch.Removals{}
	}
	r := watch.Removals{Checks: s.cfg.RemovalChecks}
	if check.FullSet && task.Truncated == 0 {
		r.Set = &watch.LinkSet{Digest: check.LinksDigest, Keys: keys}
	}
	return r
}
