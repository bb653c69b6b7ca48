package processor

import (
	"github.com/portalwatch/portalwatch/internal/watch"
)

// removals says how the store follows the links that leave the task's page
// (watch.Removals), recorded by the check's own statement. Only a check
// with the page's whole link set, not truncated (a link left out over the
// crawler's limits has not left the page), can find links missing; any
// successful check ages the absences already pending, and the one at which
// an absence reaches Config.RemovalChecks records the removal.
func (s *Service) removals(task watch.Task, check watch.Check, keys []uint64) watch.Removals {
	if s.cfg.RemovalChecks <= 0 || task.Failed() {
		return watch.Removals{}
	}
	r := watch.Removals{Checks: s.cfg.RemovalChecks}
	if check.FullSet && task.Truncated == 0 {
		r.Keys, r.Followed = keys, task.Followed
	}
	return r
}
