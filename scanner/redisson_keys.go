package scanner

// Redisson's channels a force-release of one holder tells its waiters on
// (actions.ReleaseHolder), in Redisson 3.52.0's naming (prefixName: in the lock's cluster
// slot).

// RedissonRWChannel is the channel an RReadWriteLock's waiters listen on.
func RedissonRWChannel(lock string) string { return redissonPrefixed(redissonRWChannelPrefix, lock) }

// RedissonSemaphoreChannel is the channel an RSemaphore's or RPermitExpirableSemaphore's
// waiters listen on: a release publishes the count of permits available after it.
func RedissonSemaphoreChannel(semaphore string) string {
	return redissonPrefixed(redissonSemaphoreChannel, semaphore)
}
