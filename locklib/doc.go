// Package locklib is a Redis distributed lock with fencing tokens, a capped watchdog, a
// signal when a lock is lost, re-entrant locks, FIFO hand-off between waiters, and Redlock
// over N independent servers behind the same API.
//
// # Locks
//
// A [Client] obtains locks; make one per process with [New] over any go-redis v9 client
// (one server or a Redis Cluster) and Close it at the end. A [Lock] is one held lock on one
// key, for a ttl:
//
//   - [Client.Obtain] waits until the key is free (waiters are served in arrival order), the
//     context ends or Redis fails. [Client.TryObtain] makes one attempt and does not wait.
//     On any error the returned Lock is nil: return, never go on to use it.
//   - [Lock.Release] gives the lock up. It is owner-checked, so a holder whose lock expired
//     cannot delete the next holder's, and it runs even when the context was cancelled.
//   - [Lock.Refresh] extends the lock; [WithWatchdog] does so every ttl/3 in the background,
//     up to a cap ([WithMaxRenewals], [WithMaxHold]).
//   - [Lock.Lost] is closed once the lock is lost: a renewal was refused, or its validity
//     ran out without a confirmed renewal (Redis unreachable, watchdog capped). Stop touching
//     the protected resource then; [Lock.Err] says why.
//
// # Fencing tokens
//
// A lock service cannot stop a holder that paused past its lock's expiry from writing late.
// [Lock.Token] is a fencing token, strictly greater than every token given before for the
// key: pass it with every write, and let the protected resource refuse a token lower than
// one it has seen (see ExampleLock_Token).
//
// # Re-entrant locks
//
// With [Reentrant](owner), an Obtain by the same Client with the same owner enters a lock
// that owner holds again, and the key is deleted with the last Release. The owner is named
// at every call: goroutines that merely share a context never share the lock, and an empty
// owner is refused with [ErrInvalid].
//
// # Lease semaphores
//
// [Client.Semaphore] returns a lease semaphore: at most N permits out at once on a key, each
// permit a Lock of its own from [Semaphore.Acquire] or [Semaphore.TryAcquire] (own ttl,
// watchdog, Lost(), a fencing token drawn for each grant), so a holder that crashes gives its
// permit back at its ttl. Waiters are served in arrival order; [Semaphore.Resize] changes N
// at runtime and [Semaphore.Status] reads it (docs/locklib.md, "Lease semaphores").
//
// # Multi-key locks
//
// [Client.ObtainMulti] and [Client.TryObtainMulti] take several keys at once, or none, in
// one script, so overlapping sets never deadlock; the [Lock] covers them all ([Lock.Keys]),
// with one token that fences each key. On Redis Cluster the keys must share a hash slot
// (hash-tag them: lock:{order-1001}:payment); keys across slots are refused with
// [ErrCrossSlot] before anything is sent. A multi-key lock never jumps the FIFO queue of a
// key, and waits by polling: it is not FIFO, and a stream of single-key Obtains on one of its
// keys can starve it (docs/locklib.md, "Multi-key locks").
//
// # Read-write locks
//
// [Client.ObtainRead] and [Client.ObtainWrite] (and their Try forms) take a read or the write
// lease of a read-write lock: many readers or one writer, each holder a [Lock] with its own
// TTL, watchdog and Lost(). Waiting is FIFO, so readers arriving after a queued writer wait
// behind it; a writer's Token is a fresh fencing token, a reader's the last write's. With
// [Reentrant] an owner re-enters, and may downgrade (write, then read, then release the
// write); an upgrade is refused with [ErrUpgrade] (docs/locklib.md, "Read-write locks").
//
// # Redlock
//
// [NewRedlock] returns the same Client over N independent Redis masters: a lock is held when
// a majority took it within its validity. Code switches between the two by construction
// only, except that Token is 0 there (no safe fencing token exists over independent
// counters). It also takes the Redlock-only options [WithInstanceTimeout] and [WithDrift];
// [New] does not compile with them.
//
// # Sentinel and replicas
//
// [New] works over go-redis's failover client (Sentinel) and over a cluster with replicas
// unchanged. Replication is asynchronous, so a failover can lose a lock its replicas had not
// copied yet, and hand it to a second client: fencing tokens keep the protected resource
// safe then. [WithReplicas] waits until n replicas confirm each acquisition and renewal,
// which narrows that window without closing it (docs/locklib.md, "Sentinel, replicas and WAIT").
//
// # Metrics and tracing
//
// [WithObserver] passes a function every lifecycle step ([Observation]): acquired with its
// wait, not obtained, renewed, lost, released with its hold time. [WithTracer] wraps every
// Obtain, TryObtain and Release in a [Tracer] that receives the caller's context, returns
// the one the call's Redis requests run under, and is told how the call ended: a span. Both
// are dependency-free; ready Prometheus and OpenTelemetry adapters are the separate modules
// locklib/extra/lockprom and locklib/extra/lockotel (docs/locklib.md, "Metrics and tracing").
//
// # Errors
//
// Switch on errors with [errors.Is]: [ErrNotObtained] (taken, or the context ended: the
// error then wraps ctx.Err() too), [ErrBackend] (Redis or the network; the cause stays
// reachable), [ErrInvalid] (a bad argument), [ErrNotHeld] (Release or Refresh of a lock that
// is no longer held), [ErrLost] with [ErrValidityPassed] or ErrNotHeld (from Lock.Err),
// [ErrNotReplicated] (WithReplicas: fewer replicas confirmed in time).
// Every message is one line and names the key.
//
// docs/locklib.md describes the design (waiting, events, metrics, Redis Cluster), and
// docs/guarantees.md lists every promise with the test that checks it; docs/redlock.md
// covers Redlock and docs/value-format.md what locklib writes into Redis.
package locklib
