package testsvc_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
)

func TestPollStopsWhenDone(t *testing.T) {
	t.Parallel()
	calls := 0
	err := testsvc.Poll(context.Background(), time.Minute, time.Millisecond, func() (bool, string, error) {
		calls++
		return calls == 3, "", nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestPollGivesUpAtTheTimeoutWithTheLastProgress(t *testing.T) {
	t.Parallel()
	start := time.Now()
	n := 0
	err := testsvc.Poll(context.Background(), 100*time.Millisecond, 10*time.Millisecond, func() (bool, string, error) {
		n++
		return false, "step " + strings.Repeat("I", min(n, 3)), nil
	})
	if !errors.Is(err, testsvc.ErrNotYet) || !strings.Contains(err.Error(), "(step III)") {
		t.Fatalf("Poll = %v, want ErrNotYet with the last progress", err)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
		t.Errorf("Poll gave up after %s, want just past 100ms", took)
	}
}

func TestPollReturnsTheConditionsErrorAtOnce(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	calls := 0
	err := testsvc.Poll(context.Background(), time.Minute, time.Millisecond, func() (bool, string, error) {
		calls++
		return false, "", boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("Poll = %v after %d calls, want boom after 1", err, calls)
	}
}

func TestPollEndsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := testsvc.Poll(ctx, time.Minute, 10*time.Millisecond, func() (bool, string, error) { return false, "", nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll = %v, want the context's error", err)
	}
}

func TestQueueDepthCountsReadyMessagesAndZeroForNoQueue(t *testing.T) {
	t.Parallel()
	jobQ, taskQ := testsvc.Queues(t)
	if n := testsvc.QueueDepth(t, jobQ); n != 0 {
		t.Fatalf("depth of a queue never declared = %d, want 0", n)
	}
	conn, err := amqp.Dial(testsvc.AMQPURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	if _, err := ch.QueueDeclare(taskQ, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := ch.PublishWithContext(context.Background(), "", taskQ, false, false, amqp.Publishing{Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	testsvc.WaitDepth(t, 10*time.Second, taskQ, 3)
	if err := testsvc.DropQueues(testsvc.AMQPURL(), taskQ, "pwtest_never_declared"); err != nil {
		t.Fatalf("DropQueues = %v, want a missing queue not to be an error", err)
	}
	if n := testsvc.QueueDepth(t, taskQ); n != 0 {
		t.Errorf("depth after DropQueues = %d, want 0 (no queue)", n)
	}
}

func TestDropKeysRemovesOnlyThePrefix(t *testing.T) {
	t.Parallel()
	url, prefix := testsvc.Redis(t)
	_, other := testsvc.Redis(t)
	opts, _ := redis.ParseURL(url)
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	for i := range 2500 { // more than one UNLINK batch
		rdb.Set(ctx, prefix+":k"+strconv.Itoa(i), 1, time.Minute)
	}
	rdb.Set(ctx, other+":keep", 1, time.Minute)
	if err := testsvc.DropKeys(ctx, url, prefix); err != nil {
		t.Fatal(err)
	}
	if n := len(rdb.Keys(ctx, prefix+":*").Val()); n != 0 {
		t.Errorf("%d keys left under the prefix", n)
	}
	if rdb.Exists(ctx, other+":keep").Val() != 1 {
		t.Error("DropKeys removed a key of another prefix")
	}
}
