package testsvc

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// PrivateRabbitCluster is a RabbitMQ cluster of the test's own: nodes on
// loopback, each a PrivateRabbitMQ with its own ports, data and logs, joined
// with rabbitmqctl join_cluster. Every node is stopped and its files removed
// when the test ends.
type PrivateRabbitCluster struct {
	t     testing.TB
	Nodes []*PrivateRabbitMQ
}

// StartRabbitCluster starts n RabbitMQ nodes (n >= 1) and joins the others to
// the first. On two cores it takes about 15 s for three nodes, and each node
// holds about 150 MB. The nodes share the system RabbitMQ user's Erlang
// cookie, which is how rabbitmqctl reaches them too.
func StartRabbitCluster(t testing.TB, n int) *PrivateRabbitCluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("StartRabbitCluster(%d): want at least one node", n)
	}
	id := ID(t)
	c := &PrivateRabbitCluster{t: t}
	for i := range n {
		c.Nodes = append(c.Nodes, newRabbitMQ(t, fmt.Sprintf("pwc%sn%d@localhost", id, i+1)))
	}
	var wg sync.WaitGroup
	for _, node := range c.Nodes {
		wg.Go(node.Start)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	seed := c.Nodes[0].node
	for _, node := range c.Nodes[1:] {
		for _, args := range [][]string{{"stop_app"}, {"join_cluster", seed}, {"start_app"}} {
			if out, err := node.Ctl(args...); err != nil {
				t.Fatalf("rabbitmqctl -n %s %s: %v\n%s", node.node, strings.Join(args, " "), err, out)
			}
		}
	}
	if err := c.waitRunning(n, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// Node is the node's Erlang name, as rabbitmqctl and the queues' member lists
// spell it (name@localhost).
func (r *PrivateRabbitMQ) Node() string { return r.node }

// URL is every node's AMQP URL, comma-separated, as AMQP_URL takes it.
func (c *PrivateRabbitCluster) URL() string {
	urls := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		urls[i] = n.URL()
	}
	return strings.Join(urls, ",")
}

// ByName returns the node with the Erlang name node, or nil.
func (c *PrivateRabbitCluster) ByName(node string) *PrivateRabbitMQ {
	for _, n := range c.Nodes {
		if n.node == node {
			return n
		}
	}
	return nil
}

// ByPort returns the node whose AMQP listener is on port, or nil.
func (c *PrivateRabbitCluster) ByPort(port int) *PrivateRabbitMQ {
	for _, n := range c.Nodes {
		if n.port == port {
			return n
		}
	}
	return nil
}

// QuorumQueue is what the cluster says of one quorum queue's replicas.
type QuorumQueue struct {
	Name    string   `json:"name"`
	Leader  string   `json:"leader"`
	Members []string `json:"members"`
	Online  []string `json:"online"`
}

// Queue asks a running node about queue's replicas.
func (c *PrivateRabbitCluster) Queue(queue string) (QuorumQueue, error) {
	var qs []QuorumQueue
	if err := c.ctlJSON(&qs, "list_queues", "name", "leader", "members", "online"); err != nil {
		return QuorumQueue{}, err
	}
	for _, q := range qs {
		if q.Name == queue {
			return q, nil
		}
	}
	return QuorumQueue{}, fmt.Errorf("queue %s not found in the cluster", queue)
}

// ConnectionNode returns the node that holds the client connection whose
// client-given name (amqp091-go's connection_name property) starts with
// prefix.
func (c *PrivateRabbitCluster) ConnectionNode(prefix string) (*PrivateRabbitMQ, error) {
	// client_properties comes as a list of [key, type, value] triples.
	var conns []struct {
		Port       int     `json:"port"`
		Properties [][]any `json:"client_properties"`
	}
	if err := c.ctlJSON(&conns, "list_connections", "port", "client_properties"); err != nil {
		return nil, err
	}
	for _, conn := range conns {
		name := ""
		for _, p := range conn.Properties {
			if len(p) == 3 && p[0] == "connection_name" {
				name, _ = p[2].(string)
			}
		}
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if n := c.ByPort(conn.Port); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("connection %q is on port %d, which no node of the cluster has", name, conn.Port)
	}
	return nil, fmt.Errorf("no connection named %q... in the cluster", prefix)
}

// WaitQueueOnline waits until every member of queue's replicas is online,
// for up to timeout: only then can another node stop without costing the
// queue its quorum.
func (c *PrivateRabbitCluster) WaitQueueOnline(queue string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		q, err := c.Queue(queue)
		if err == nil && len(q.Members) > 0 && len(q.Online) == len(q.Members) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue %s not fully online after %s: %+v (%v)", queue, timeout, q, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitRunning waits until the cluster reports n running nodes.
func (c *PrivateRabbitCluster) waitRunning(n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var status struct {
			Running []string `json:"running_nodes"`
		}
		err := c.ctlJSON(&status, "cluster_status")
		if err == nil && len(status.Running) == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster has %d of %d nodes running after %s (%v)", len(status.Running), n, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ctlJSON runs a rabbitmqctl command with JSON output on the first node that
// answers, so it works while some nodes are stopped.
func (c *PrivateRabbitCluster) ctlJSON(into any, args ...string) error {
	var errs []string
	for _, n := range c.Nodes {
		if !portOpen(n.port) {
			continue
		}
		out, err := n.Ctl(append(slices.Clone(args), "--formatter", "json", "--quiet")...)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v: %s", n.node, err, strings.TrimSpace(out)))
			continue
		}
		if err := json.Unmarshal([]byte(out), into); err != nil {
			errs = append(errs, fmt.Sprintf("%s: decode %q: %v", n.node, out, err))
			continue
		}
		return nil
	}
	return fmt.Errorf("rabbitmqctl %s: no node answered: %s", strings.Join(args, " "), strings.Join(errs, "; "))
}
