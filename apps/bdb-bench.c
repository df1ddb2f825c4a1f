/*
 * bdb-bench: the studies' Berkeley DB workload (see the spec's
 * workloads.md): random inserts and deletes on a B+tree or a hash table,
 * each an ACID transaction with a durable commit (the log is written and
 * synced at commit: no DB_TXN_NOSYNC), from N threads sharing one
 * environment (DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG | DB_INIT_MPOOL |
 * DB_THREAD).
 *
 * Built at run time by `storlab app run bdb-btree|bdb-hash` with
 *   cc -O2 -pthread bdb-bench.c -ldb -o bdb-bench
 * (libdb5.3-dev). Usage:
 *   bdb-bench DIR btree|hash KEYS THREADS SECONDS CACHE_MB load|run|stat
 * load: DIR is created and every other key of KEYS (half of them) is
 * loaded in large non-durable transactions, then checkpointed. run: each
 * thread runs random transactions for SECONDS (or, when SECONDS is xN,
 * until N transactions have committed in all): an insert (put) or a
 * delete of a uniformly random key of KEYS, half each. Prints one JSON
 * line:
 *   {"load_s":..,"seconds":..,"transactions":..,"tps":..,"deadlocks":..}
 * stat: prints the shape libdb gave the database (DB->stat): for a hash
 * table {"keys":..,"buckets":..,"overflow_pages":..}, for a B+tree
 * {"keys":..,"levels":..,"internal_pages":..,"leaf_pages":..}.
 */
#include <db.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define VALUE_BYTES 100

static DB_ENV *env;
static DB *db;
static uint64_t nkeys;
static double run_seconds;
static uint64_t txn_limit; /* 0: run for run_seconds */
static uint64_t issued;
static volatile int stop;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static double tv_s(struct timeval t)
{
	return t.tv_sec + t.tv_usec / 1e6;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "bdb-bench: %s: %s\n", what, db_strerror(ret));
	exit(1);
}

/* xorshift64*: a per-thread generator, seeded by thread number */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static void fill(DBT *k, DBT *v, uint64_t *key, char *val, uint64_t n)
{
	memset(k, 0, sizeof *k);
	memset(v, 0, sizeof *v);
	*key = n;
	k->data = key;
	k->size = sizeof *key;
	memset(val, (int)(n & 0xff), VALUE_BYTES);
	v->data = val;
	v->size = VALUE_BYTES;
}

struct worker {
	int id;
	uint64_t txns, deadlocks;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(w->id + 1);
	char val[VALUE_BYTES];
	while (!stop) {
		if (txn_limit && __atomic_fetch_add(&issued, 1, __ATOMIC_RELAXED) >= txn_limit)
			break;
		uint64_t r = next(&s), key;
		DBT k, v;
		fill(&k, &v, &key, val, r % nkeys);
		for (;;) { /* until it commits: a deadlock retries it */
			DB_TXN *t;
			int ret;
			if ((ret = env->txn_begin(env, NULL, &t, 0)) != 0)
				die("txn_begin", ret);
			if (r >> 63)
				ret = db->put(db, t, &k, &v, 0);
			else
				ret = db->del(db, t, &k, 0);
			if (ret == DB_LOCK_DEADLOCK || ret == DB_LOCK_NOTGRANTED) {
				t->abort(t);
				w->deadlocks++;
				continue;
			}
			if (ret != 0 && ret != DB_NOTFOUND)
				die("put/del", ret);
			if ((ret = t->commit(t, 0)) != 0)
				die("commit", ret);
			break;
		}
		w->txns++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 8 || (strcmp(argv[7], "load") && strcmp(argv[7], "run") &&
			  strcmp(argv[7], "stat"))) {
		fprintf(stderr, "usage: bdb-bench DIR btree|hash KEYS THREADS SECONDS CACHE_MB load|run|stat\n");
		return 2;
	}
	const char *dir = argv[1];
	DBTYPE type = strcmp(argv[2], "hash") == 0 ? DB_HASH : DB_BTREE;
	nkeys = strtoull(argv[3], NULL, 10);
	int threads = atoi(argv[4]);
	if (argv[5][0] == 'x') {
		txn_limit = strtoull(argv[5] + 1, NULL, 10);
		run_seconds = txn_limit ? 1e9 : 0;
	} else {
		run_seconds = atof(argv[5]);
	}
	unsigned cache_mb = (unsigned)atoi(argv[6]);
	int load_only = strcmp(argv[7], "load") == 0;
	if (nkeys < 2 || threads < 1 || run_seconds <= 0) {
		fprintf(stderr, "bdb-bench: KEYS >= 2, THREADS >= 1, SECONDS > 0\n");
		return 2;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		perror(dir);
		return 1;
	}
	int ret;
	if ((ret = db_env_create(&env, 0)) != 0)
		die("db_env_create", ret);
	env->set_errfile(env, stderr);
	env->set_cachesize(env, cache_mb / 1024, (cache_mb % 1024) << 20, 1);
	env->set_lk_detect(env, DB_LOCK_DEFAULT);
	env->set_lk_max_locks(env, 100000);
	env->set_lk_max_objects(env, 100000);
	env->set_lg_bsize(env, 1 << 20);
	if ((ret = env->open(env, dir,
			     DB_CREATE | DB_INIT_TXN | DB_INIT_LOCK | DB_INIT_LOG |
				     DB_INIT_MPOOL | DB_THREAD | DB_RECOVER,
			     0644)) != 0)
		die("env open", ret);
	env->log_set_config(env, DB_LOG_AUTO_REMOVE, 1);
	if ((ret = db_create(&db, env, 0)) != 0)
		die("db_create", ret);
	if ((ret = db->open(db, NULL, "bench.db", NULL, type,
			    DB_CREATE | DB_THREAD | DB_AUTO_COMMIT, 0644)) != 0)
		die("db open", ret);

	if (strcmp(argv[7], "stat") == 0) {
		if (type == DB_HASH) {
			DB_HASH_STAT *st;
			if ((ret = db->stat(db, NULL, &st, 0)) != 0)
				die("stat", ret);
			printf("{\"keys\":%lu,\"buckets\":%lu,\"overflow_pages\":%lu}\n",
			       (unsigned long)st->hash_nkeys, (unsigned long)st->hash_buckets,
			       (unsigned long)st->hash_overflows);
			free(st);
		} else {
			DB_BTREE_STAT *st;
			if ((ret = db->stat(db, NULL, &st, 0)) != 0)
				die("stat", ret);
			printf("{\"keys\":%lu,\"levels\":%lu,\"internal_pages\":%lu,\"leaf_pages\":%lu}\n",
			       (unsigned long)st->bt_nkeys, (unsigned long)st->bt_levels,
			       (unsigned long)st->bt_int_pg, (unsigned long)st->bt_leaf_pg);
			free(st);
		}
		db->close(db, 0);
		env->close(env, 0);
		return 0;
	}

	/* load half the key space: big transactions without a sync each,
	 * then a checkpoint makes them durable */
	double t0 = now();
	char val[VALUE_BYTES];
	for (uint64_t base = 0; load_only && base < nkeys; base += 20000) {
		DB_TXN *t;
		if ((ret = env->txn_begin(env, NULL, &t, DB_TXN_NOSYNC)) != 0)
			die("txn_begin (load)", ret);
		for (uint64_t n = base; n < base + 20000 && n < nkeys; n += 2) {
			uint64_t key;
			DBT k, v;
			fill(&k, &v, &key, val, n);
			if ((ret = db->put(db, t, &k, &v, 0)) != 0)
				die("put (load)", ret);
		}
		if ((ret = t->commit(t, DB_TXN_NOSYNC)) != 0)
			die("commit (load)", ret);
	}
	if ((ret = env->txn_checkpoint(env, 0, 0, DB_FORCE)) != 0)
		die("checkpoint", ret);
	double load = now() - t0;
	if (load_only) {
		db->close(db, 0);
		env->close(env, 0);
		printf("{\"load_s\":%.3f}\n", load);
		return 0;
	}

	pthread_t *tid = calloc(threads, sizeof *tid);
	struct worker *w = calloc(threads, sizeof *w);
	struct rusage ru0, ru1;
	getrusage(RUSAGE_SELF, &ru0);
	double t1 = now();
	for (int i = 0; i < threads; i++) {
		w[i].id = i;
		if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	struct timespec nap = {0, 10 * 1000 * 1000};
	while (!txn_limit && now() - t1 < run_seconds)
		nanosleep(&nap, NULL);
	if (!txn_limit)
		stop = 1;
	uint64_t txns = 0, dl = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		txns += w[i].txns;
		dl += w[i].deadlocks;
	}
	double secs = now() - t1;
	getrusage(RUSAGE_SELF, &ru1);
	db->close(db, DB_NOSYNC);
	env->close(env, 0);
	printf("{\"load_s\":%.3f,\"seconds\":%.3f,\"transactions\":%llu,\"tps\":%.2f,\"deadlocks\":%llu,"
	       "\"cpu_user_s\":%.6f,\"cpu_sys_s\":%.6f}\n",
	       load, secs, (unsigned long long)txns, txns / secs, (unsigned long long)dl,
	       tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime), tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime));
	return 0;
}
