package runtime

import (
	goruntime "runtime"
	"slices"
	"time"
)

// A worker is a goroutine that runs request actors one after another. Each request still runs
// alone, with its own context, and reports to the dispatcher as an actor does; reusing the
// goroutine only keeps its grown stack, which a fresh goroutine per request would copy again
// and again (a quarter of the CPU of small requests, by profile).
//
// The dispatcher owns its workers. It hands a request to the worker that became idle last
// (its stack and caches are the warmest) or starts a new one; it learns that a worker is idle
// from the completion of its request, or from its detaching (a handler that returned a
// Continuation, which goes on on a goroutine of its own: a worker's stack is as deep as its
// deepest request, and a request that waits on it would keep all of it); it ends workers that
// stay idle for workerIdle to 2×workerIdle; and it ends them all when it stops. A worker
// itself keeps no timer and waits on nothing but its own mailbox.
type worker struct {
	jobs chan job // buffered: the dispatcher never waits to hand over a request
	gen  uint32   // the dispatcher's reap generation when the worker last became idle
}

// job is one request for a worker to run as its actor.
type job struct {
	e *entry // and the request's context
	h Handler
}

// workerIdle is how long an idle worker waits for another request, at least, before it ends.
const workerIdle = time.Second

// runWorker hands j to an idle worker, or to a new one.
func (d *dispatcher) runWorker(j job) {
	if n := len(d.idle); n > 0 {
		w := d.idle[n-1]
		d.idle[n-1] = nil
		d.idle = d.idle[:n-1]
		j.e.w = w
		w.jobs <- j
		return
	}
	w := &worker{jobs: make(chan job, 1)}
	j.e.w = w
	w.jobs <- j // its first, in its mailbox: the goroutine starts with the fewest words
	go d.work(w)
	// The new worker waits in this goroutine's run queue until the dispatcher blocks or
	// yields; under a burst it would not block for many requests, each of which found no
	// worker idle yet and started another (about 160 of them, 4 KiB of stack each, for a
	// burst of parked tool calls). Yielding here lets the workers already started run and
	// report, so that the next requests find them idle. A worker is started only when none is
	// idle, so a steady load seldom gets here.
	goruntime.Gosched()
}

// work is the worker's goroutine. The completion that runActor sends tells the dispatcher
// that the worker is idle again.
func (d *dispatcher) work(w *worker) {
	for j := range w.jobs {
		d.runActor(j.e, j.e, j.h)
	}
}

// becameIdle records that w finished its request.
func (d *dispatcher) becameIdle(w *worker) {
	w.gen = d.reapGen
	d.idle = append(d.idle, w)
	if d.reapC == nil {
		if d.reap == nil {
			d.reap = time.NewTimer(workerIdle)
		} else {
			d.reap.Reset(workerIdle)
		}
		d.reapC = d.reap.C
	}
}

// reapIdle ends the workers that were already idle when the reap timer last fired. The idle
// list is in the order workers became idle, so they are the first ones.
func (d *dispatcher) reapIdle() {
	n := 0
	for n < len(d.idle) && d.idle[n].gen < d.reapGen {
		close(d.idle[n].jobs)
		n++
	}
	d.idle = slices.Delete(d.idle, 0, n)
	d.reapGen++
	if len(d.idle) > 0 {
		d.reap.Reset(workerIdle)
		d.reapC = d.reap.C
	}
}

// stopWorkers ends every worker when the dispatcher stops: the idle ones now, the ones still
// running a request (abandoned at the drain deadline) once their handler returns.
func (d *dispatcher) stopWorkers() {
	for _, w := range d.idle {
		close(w.jobs)
	}
	d.idle = nil
	d.table.each(func(e *entry) {
		if e.w != nil {
			close(e.w.jobs)
		}
	})
	if d.reap != nil {
		d.reap.Stop()
	}
}
