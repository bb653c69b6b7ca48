//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/testkit/systest"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

// Pipeline-on-a-cluster run: pipelineClusterPages pages through
// pipelineClusterRounds scripted rounds of at least pipelineClusterMinRound
// each. The rounds are many and short so that the farm keeps the pipeline
// busy through all three stop-and-start cycles (20 to 25 s each on two
// cores, rabbitmqctl's own calls included) while every stop still meets a
// page due within a second or two.
const (
	pipelineClusterPages    = 24
	pipelineClusterRounds   = 60
	pipelineClusterMinRound = 1500 * time.Millisecond
	pipelineClusterWarmup   = 2                // rounds every page completes before the first stop
	pipelineClusterBudget   = 3 * time.Minute  // for driving the farm; the servers take about 20 s more
	pipelineRecovery        = 15 * time.Second // the most a node's stop may stall recording
)

// Roles a node can hold when it is stopped.
const (
	rolePrograms    = "programs' connections"
	roleJobLeader   = "job queue leader"
	roleTaskLeader  = "task queue leader"
	programConnName = "portalwatch " // every program's connection name starts so (queue.Config.Named)
)

// TestPipelineOnRabbitCluster runs the real pipeline (a scheduler, two
// crawlers, two processors) with AMQP_URL naming the three nodes of a
// private RabbitMQ cluster, drives the farm through its rounds and stops each
// node in turn: first one holding programs' connections, then the task
// queue's leader, then the job queue's leader (or whichever node is left),
// starting each again before the next stop. After every stop a check fetched
// once the node was down must be recorded within 15 s, and at the end the
// updates and removals must equal the farm's truth.
func TestPipelineOnRabbitCluster(t *testing.T) {
	w := newWorld(t, servers{rabbitNodes: 3}, "PORTALWATCH_CRAWLER_CONCURRENCY=8", "PORTALWATCH_PROCESSOR_CONCURRENCY=4",
		fmt.Sprintf("PORTALWATCH_REMOVAL_CHECKS=%d", removalChecks))
	cluster := w.rabbits

	farm := systest.NewFarm(t, pipelineClusterPages)
	farm.QuietAfter(pipelineClusterRounds)
	ids, err := farm.Register(w.sys)
	if err != nil {
		t.Fatal(err)
	}
	w.startFleet(map[string]string{
		"scheduler-1": "scheduler",
		"crawler-1":   "crawler", "crawler-2": "crawler",
		"processor-1": "processor", "processor-2": "processor",
	}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), pipelineClusterBudget)
	defer cancel()
	faultCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	var recoveries []time.Duration
	rolesStopped := map[string]bool{}
	var faults sync.WaitGroup
	faults.Go(func() {
		// An error after faultCtx ended means only that the farm finished
		// first, which the count of recoveries reports.
		if err := waitAllPagesAt(faultCtx, farm, pipelineClusterWarmup); err != nil {
			if faultCtx.Err() == nil {
				t.Errorf("before the first stop: %v", err)
			}
			return
		}
		stopped := map[string]bool{}
		for round := range cluster.Nodes {
			for _, q := range []string{w.sys.JobQueue, w.sys.TaskQ} {
				if err := cluster.WaitQueueOnline(q, time.Minute); err != nil {
					t.Errorf("stop %d: %v", round+1, err)
					return
				}
			}
			victim, roles, err := pickPipelineVictim(cluster, w.sys, round, stopped)
			if err != nil {
				t.Errorf("stop %d: %v", round+1, err)
				return
			}
			stopped[victim.Node()] = true
			for _, r := range roles {
				rolesStopped[strings.SplitN(r, " (", 2)[0]] = true
			}
			stopAt := time.Now()
			victim.Stop()
			downAt := time.Now()
			w.log.add("rabbitmq node stop", "%s %v, down after %v", victim.Node(), roles, downAt.Sub(stopAt).Round(time.Millisecond))
			recovered, err := waitCheckAfter(faultCtx, w.sys, downAt, stopAt.Add(pipelineRecovery))
			if err != nil && faultCtx.Err() != nil {
				return
			}
			if err != nil {
				t.Errorf("stop %d: nothing recorded within %s of stopping %s: %v", round+1, pipelineRecovery, victim.Node(), err)
				return
			}
			recoveries = append(recoveries, recovered.Sub(stopAt))
			w.log.add("pipeline recorded", "a check fetched after %s went down, %v after the stop began",
				victim.Node(), recovered.Sub(stopAt).Round(time.Millisecond))
			victim.Start()
			w.log.add("rabbitmq node start", "%s", victim.Node())
		}
	})

	err = farm.Drive(ctx, w.sys, ids, pipelineClusterRounds+quietRounds, pipelineClusterMinRound, 60*time.Second, t.Logf)
	farmDone := time.Now()
	stopFaults()
	faults.Wait()
	if err != nil {
		t.Fatalf("driving the farm: %v", err)
	}
	w.fleet.shutdown()
	v, err := farm.Check(ctx, w.sys)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := farm.CheckRemovals(ctx, w.sys, removalChecks)
	if err != nil {
		t.Fatal(err)
	}
	w.report(v, farm, rv)
	t.Logf("recovery after each stop: %v", recoveries)
	if len(recoveries) != len(cluster.Nodes) {
		t.Errorf("%d of %d nodes were stopped and recovered from before the farm finished at %.1fs: the farm needs more rounds",
			len(recoveries), len(cluster.Nodes), farmDone.Sub(w.log.start).Seconds())
	}
	for _, role := range []string{rolePrograms, roleTaskLeader} {
		if !rolesStopped[role] {
			t.Errorf("no stop took the node of the %s", role)
		}
	}
	if v.Missing != 0 || v.Extra != 0 || v.Duplicates != 0 || v.Expected != pipelineClusterPages*pipelineClusterRounds*3 {
		t.Errorf("updates differ from the truth: %s", v)
	}
	if rv.Missing != 0 || rv.Extra != 0 || rv.Twice != 0 || rv.Unsettled != 0 || rv.Expected != pipelineClusterPages*pipelineClusterRounds || rv.Recorded != rv.Expected {
		t.Errorf("removals differ from the truth: %s", rv)
	}
	if n := farm.TimedOutRounds(); n != 0 {
		t.Errorf("%d rounds were never checked within the deadline", n)
	}
	for _, q := range []string{w.sys.JobQueue + ".dlq", w.sys.TaskQ + ".dlq"} {
		if n := testsvc.QueueDepthAt(t, cluster.Nodes[0].URL(), q); n != 0 {
			t.Errorf("%s holds %d messages, want 0", q, n)
		}
	}
}

// waitCheckAfter waits until the system records a successful check fetched
// after since, and returns when it saw it; it fails at deadline. A check
// fetched after a node went down took the whole path (scheduler, job queue,
// crawler, task queue, processor) after the loss.
func waitCheckAfter(ctx context.Context, s *systest.System, since, deadline time.Time) (time.Time, error) {
	var seen time.Time
	err := testsvc.Poll(ctx, time.Until(deadline), 50*time.Millisecond, func() (bool, string, error) {
		var n int
		if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM pages WHERE last_error IS NULL AND last_checked_at > $1`, since).Scan(&n); err != nil {
			return false, "", fmt.Errorf("read pages: %w", err)
		}
		seen = time.Now()
		return n > 0, "no check fetched after the stop recorded", nil
	})
	return seen, err
}

// pickPipelineVictim returns the node to stop in round (0-based): the one
// holding the most of the programs' connections, then the task queue's
// leader, then the job queue's leader, each unless it was stopped already,
// else any node not stopped yet; and every role that node has now.
func pickPipelineVictim(cluster *testsvc.PrivateRabbitCluster, s *systest.System, round int, stopped map[string]bool) (*testsvc.PrivateRabbitMQ, []string, error) {
	conns, err := programConnections(cluster)
	if err != nil {
		return nil, nil, err
	}
	leaders := map[string]string{}
	for role, q := range map[string]string{roleJobLeader: s.JobQueue, roleTaskLeader: s.TaskQ} {
		info, err := cluster.Queue(q)
		if err != nil {
			return nil, nil, err
		}
		leaders[role] = info.Leader
	}
	var busiest string
	for node, n := range conns {
		if busiest == "" || n > conns[busiest] {
			busiest = node
		}
	}
	preferred := []string{busiest, leaders[roleTaskLeader], leaders[roleJobLeader]}[round%3]
	candidates := append([]*testsvc.PrivateRabbitMQ{cluster.ByName(preferred)}, cluster.Nodes...)
	for _, n := range candidates {
		if n == nil || stopped[n.Node()] {
			continue
		}
		var roles []string
		if c := conns[n.Node()]; c > 0 {
			roles = append(roles, fmt.Sprintf("%s (%d)", rolePrograms, c))
		}
		for _, role := range []string{roleJobLeader, roleTaskLeader} {
			if leaders[role] == n.Node() {
				roles = append(roles, role)
			}
		}
		return n, roles, nil
	}
	return nil, nil, fmt.Errorf("every node was stopped already")
}

// programConnections counts the programs' connections on each node, by
// node name.
func programConnections(cluster *testsvc.PrivateRabbitCluster) (map[string]int, error) {
	counts := map[string]int{}
	// Every node lists the whole cluster's connections; ask the first that
	// answers.
	var errs []string
	for _, node := range cluster.Nodes {
		out, err := node.Ctl("list_connections", "port", "client_properties", "--formatter", "json", "--quiet")
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", node.Node(), err))
			continue
		}
		// client_properties comes as a list of [key, type, value] triples.
		var conns []struct {
			Port       int     `json:"port"`
			Properties [][]any `json:"client_properties"`
		}
		if err := json.Unmarshal([]byte(out), &conns); err != nil {
			return nil, fmt.Errorf("decode rabbitmqctl list_connections %q: %w", out, err)
		}
		for _, c := range conns {
			isProgram := slices.ContainsFunc(c.Properties, func(p []any) bool {
				if len(p) != 3 || p[0] != "connection_name" {
					return false
				}
				name, _ := p[2].(string)
				return strings.HasPrefix(name, programConnName)
			})
			if n := cluster.ByPort(c.Port); isProgram && n != nil {
				counts[n.Node()]++
			}
		}
		return counts, nil
	}
	return nil, fmt.Errorf("list the programs' connections: no node answered: %s", strings.Join(errs, "; "))
}
