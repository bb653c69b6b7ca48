// Package e2e runs the real portalwatch programs as processes against the
// real PostgreSQL, RabbitMQ and Redis, each test with its own database, queue
// names and key prefix, and checks what users see in the updates table.
package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// binDir holds the programs, built once with the race detector.
var binDir string

func TestMain(m *testing.M) { systest.Main(m, true, &binDir) }

// system adds the e2e tests' own waits and queries to a systest.System.
type system struct {
	*systest.System
	t  *testing.T
	db *pgxpool.Pool
}

func newSystem(t *testing.T, extraEnv ...string) *system {
	t.Helper()
	s := systest.New(t, binDir, systest.Shared(), append([]string{"PORTALWATCH_LOG_LEVEL=debug"}, extraEnv...)...)
	return &system{System: s, t: t, db: s.DB}
}

func (s *system) start(program string) *systest.Process { return s.Start(program) }

func (s *system) watchctl(args ...string) (string, error) { return s.Watchctl(args...) }

// checkNow makes a page due at once, so tests need not wait an interval.
func (s *system) checkNow(pageID int64) {
	s.t.Helper()
	if _, err := s.db.Exec(context.Background(), `UPDATE pages SET next_check_at = now() WHERE id = $1`, pageID); err != nil {
		s.t.Fatal(err)
	}
}

// lastChecked returns when the page was last checked; zero if never.
func (s *system) lastChecked(pageID int64) (time.Time, error) {
	var t *time.Time
	err := s.db.QueryRow(context.Background(), `SELECT last_checked_at FROM pages WHERE id = $1`, pageID).Scan(&t)
	if err != nil || t == nil {
		return time.Time{}, err
	}
	return *t, nil
}

// waitForCheck forces a check of the page and waits until one that started
// after now is recorded.
func (s *system) waitForCheck(pageID int64) {
	s.t.Helper()
	before := time.Now()
	s.checkNow(pageID)
	testsvc.Eventually(s.t, 60*time.Second, fmt.Sprintf("a new check of page %d", pageID), func() (bool, error) {
		t, err := s.lastChecked(pageID)
		return !t.IsZero() && t.After(before), err
	})
}

type update struct {
	PageID int64
	URL    string
	Text   string
}

func (s *system) updates() []update {
	s.t.Helper()
	rows, err := s.db.Query(context.Background(), `SELECT page_id, url, text FROM updates ORDER BY id`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	var us []update
	for rows.Next() {
		var u update
		if err := rows.Scan(&u.PageID, &u.URL, &u.Text); err != nil {
			s.t.Fatal(err)
		}
		us = append(us, u)
	}
	return us
}
