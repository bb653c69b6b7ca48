package testsvc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// PrivateRedisCluster is a Redis Cluster of the test's own: masters on
// loopback without replicas, each a server with its own ports (client and
// cluster bus), data folder and log, joined with redis-cli --cluster create.
// Every node is stopped and its files removed when the test ends.
//
// The nodes run with cluster-require-full-coverage no, as README.md advises
// for portalwatch: when a master is lost, only the keys of its slots fail
// and the rest of the cluster keeps answering. Their cluster-node-timeout is
// 2 s, so the others mark a lost master as failed within seconds.
type PrivateRedisCluster struct {
	t     testing.TB
	Nodes []*PrivateRedisNode
}

// PrivateRedisNode is one master of a PrivateRedisCluster.
type PrivateRedisNode struct {
	*server
	busPort int
}

// Addr is the node's host:port.
func (n *PrivateRedisNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

// StartRedisCluster starts n masters (n >= 3, as redis-cli requires) and
// assigns the 16,384 slots evenly among them. It returns once every node
// reports cluster_state:ok. Three nodes take about a second.
func StartRedisCluster(t testing.TB, n int) *PrivateRedisCluster {
	t.Helper()
	if n < 3 {
		t.Fatalf("StartRedisCluster(%d): a Redis Cluster needs at least 3 masters", n)
	}
	bin := need(t, "redis-server")
	cli := need(t, "redis-cli")
	c := &PrivateRedisCluster{t: t}
	for range n {
		s := newServer(t, "redis-cluster")
		node := &PrivateRedisNode{server: s, busPort: freePort(t)}
		s.start = func() *exec.Cmd {
			return exec.Command(bin, "--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
				"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(node.busPort),
				"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
				"--cluster-require-full-coverage", "no",
				"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no")
		}
		s.ready = func() error { return redisPing(s.port) }
		c.Nodes = append(c.Nodes, node)
	}
	var wg sync.WaitGroup
	for _, node := range c.Nodes {
		wg.Go(node.Start)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	args := []string{"--cluster", "create"}
	for _, node := range c.Nodes {
		args = append(args, node.Addr())
	}
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if err := c.WaitState("ok", c.Nodes, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// URL is the cluster's REDIS_URL, listing every node.
func (c *PrivateRedisCluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr()
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// Info returns one line's value of CLUSTER INFO as node sees it, such as
// "cluster_state" or "cluster_slots_fail".
func (n *PrivateRedisNode) Info(field string) (string, error) {
	out, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.port), "cluster", "info").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redis-cli -p %d cluster info: %v: %s", n.port, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v, nil
		}
	}
	return "", fmt.Errorf("cluster info of node %s has no %s:\n%s", n.Addr(), field, out)
}

// WaitState waits until every node of nodes reports cluster_state:state
// ("ok" or "fail"), for up to timeout.
func (c *PrivateRedisCluster) WaitState(state string, nodes []*PrivateRedisNode, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, n := range nodes {
		for {
			got, err := n.Info("cluster_state")
			if err == nil && got == state {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %s: cluster_state %q (%v) after %s, want %q", n.Addr(), got, err, timeout, state)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// WaitSlotsFailed waits until node sees at least one slot failed (a master
// lost and marked FAIL by the others), for up to timeout.
func (c *PrivateRedisCluster) WaitSlotsFailed(node *PrivateRedisNode, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		v, err := node.Info("cluster_slots_fail")
		if n, _ := strconv.Atoi(v); err == nil && n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s sees no failed slot after %s (%q, %v)", node.Addr(), timeout, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PrivateRedisSentinel is a Redis primary, one replica of it and one
// Sentinel watching them under the name "mymaster", all of the test's own
// on loopback. The Sentinel alone is a quorum: it fails over one second
// after it loses the primary.
type PrivateRedisSentinel struct {
	Primary, Replica *PrivateRedis
	Sentinel         *PrivateRedis
}

// StartRedisSentinel starts the primary, the replica and the Sentinel and
// returns once the Sentinel knows the replica.
func StartRedisSentinel(t testing.TB) *PrivateRedisSentinel {
	t.Helper()
	bin := need(t, "redis-server")
	redisNode := func(extra ...string) *PrivateRedis {
		s := newServer(t, "redis-sentinel")
		s.start = func() *exec.Cmd {
			return exec.Command(bin, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port),
				"--save", "", "--appendonly", "no", "--dir", s.dir, "--daemonize", "no"}, extra...)...)
		}
		s.ready = func() error { return redisPing(s.port) }
		s.Start()
		return &PrivateRedis{s}
	}
	rs := &PrivateRedisSentinel{Primary: redisNode()}
	rs.Replica = redisNode("--replicaof", "127.0.0.1", strconv.Itoa(rs.Primary.port))
	s := newServer(t, "redis-sentinel")
	conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor mymaster 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds mymaster 1000\n"+
		"sentinel failover-timeout mymaster 5000\n", s.port, s.dir, rs.Primary.port)
	confPath := s.dir + "/sentinel.conf"
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	s.start = func() *exec.Cmd { return exec.Command(bin, confPath, "--sentinel") }
	s.ready = func() error { return redisPing(s.port) }
	s.Start()
	rs.Sentinel = &PrivateRedis{s}
	err := Poll(context.Background(), 30*time.Second, 100*time.Millisecond, func() (bool, string, error) {
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(s.port), "sentinel", "replicas", "mymaster").CombinedOutput()
		return err == nil && strings.Contains(string(out), strconv.Itoa(rs.Replica.port)), string(out), nil
	})
	if err != nil {
		t.Fatalf("the Sentinel does not know the replica: %v", err)
	}
	return rs
}

// URL is the REDIS_URL of the primary through the Sentinel.
func (rs *PrivateRedisSentinel) URL() string {
	return fmt.Sprintf("redis+sentinel://127.0.0.1:%d/mymaster/0", rs.Sentinel.port)
}

// WaitPrimary waits until the Sentinel names node as the primary, for up to
// timeout.
func (rs *PrivateRedisSentinel) WaitPrimary(node *PrivateRedis, timeout time.Duration) error {
	return Poll(context.Background(), timeout, 100*time.Millisecond, func() (bool, string, error) {
		out, err := exec.Command("redis-cli", "-p", strconv.Itoa(rs.Sentinel.port),
			"sentinel", "get-master-addr-by-name", "mymaster").CombinedOutput()
		return err == nil && strings.Contains(string(out), strconv.Itoa(node.port)), strings.TrimSpace(string(out)), nil
	})
}
