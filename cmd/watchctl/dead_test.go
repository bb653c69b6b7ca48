package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/portalwatch/portalwatch/internal/queue"
	"github.com/portalwatch/portalwatch/internal/testkit/testsvc"
	"github.com/portalwatch/portalwatch/internal/watch"
)

func TestDeadListRequeuePurge(t *testing.T) {
	t.Parallel()
	jobQ, taskQ := testsvc.Queues(t)
	e := env{"PORTALWATCH_JOB_QUEUE": jobQ, "PORTALWATCH_TASK_QUEUE": taskQ, "AMQP_URL": testsvc.AMQPURL()}
	log := testsvc.Logger(t)
	cfg := queue.Config{URL: testsvc.AMQPURL()}
	pub, err := queue.NewPublisher(cfg, log, jobQ, taskQ)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	ctx := context.Background()
	if err := pub.Publish(ctx, jobQ, watch.Message{Body: []byte(`{"broken":`)}); err != nil {
		t.Fatal(err)
	}
	// A consumer that refuses the message dead-letters it with its reason.
	cctx, cancel := context.WithCancel(ctx)
	handled := make(chan struct{}, 10)
	c, err := queue.NewConsumer(queue.ConsumerConfig{Config: cfg, Queue: jobQ}, log, func(context.Context, watch.Delivery) error {
		handled <- struct{}{}
		return watch.Permanent(errors.New("job is not JSON: unexpected end of JSON input"))
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Run(cctx); close(done) }()
	select {
	case <-handled:
	case <-time.After(20 * time.Second):
		t.Fatal("the consumer never got the message")
	}
	cancel()
	<-done
	testsvc.WaitDepth(t, 20*time.Second, queue.DeadLetterQueue(jobQ), 1)

	code, out, errOut := runCLI(t, e, "dead", "list")
	if code != 0 || !strings.Contains(out, queue.DeadLetterQueue(jobQ)+": 1 message\n") || !strings.Contains(out, "job is not JSON") ||
		!strings.Contains(out, `{"broken":`) || !strings.Contains(out, queue.DeadLetterQueue(taskQ)+": 0 messages") {
		t.Fatalf("dead list: exit %d\n%s%s", code, out, errOut)
	}
	testsvc.WaitDepth(t, 20*time.Second, queue.DeadLetterQueue(jobQ), 1) // listing keeps the message

	if code, out, errOut := runCLI(t, e, "dead", "requeue", "--queue", "job"); code != 0 || !strings.Contains(out, "requeued 1 message ") {
		t.Fatalf("dead requeue: exit %d\n%s%s", code, out, errOut)
	}
	testsvc.WaitDepth(t, 20*time.Second, queue.DeadLetterQueue(jobQ), 0)
	testsvc.WaitDepth(t, 20*time.Second, jobQ, 1)

	if err := pub.Publish(ctx, queue.DeadLetterQueue(taskQ), watch.Message{Body: []byte("x")}, watch.Message{Body: []byte("y")}); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, e, "dead", "purge", "--queue", "task"); code != 0 || !strings.Contains(out, "purged 2 messages") {
		t.Fatalf("dead purge: exit %d\n%s", code, out)
	}
	if code, _, _ := runCLI(t, e, "dead", "list", "--queue", "nope"); code != exitUsage {
		t.Errorf("dead list --queue nope: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, e, "dead"); code != exitUsage {
		t.Errorf("dead without a subcommand: exit %d, want 2", code)
	}
}
