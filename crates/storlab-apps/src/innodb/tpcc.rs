//! TPC-C (`tpcc`) on the InnoDB engine: its tables with TPC-C's
//! cardinalities and row sizes, NURand, and the five transactions.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde_json::json;

use crate::error::AppError;
use crate::info::{AppInfo, AppKind, ParamDef, Params};
use crate::model::{MetricKind, Model, PlanCx, SetupCx, Step};

use super::engine::{
    engine_params, statement_us, Inno, Layouter, Table, ENGINE_MODELS, ENGINE_SIMPLIFIES,
    INNODB_PARAMS, PAGE, RANDOM_FILL, ROW_OVERHEAD, ROW_US, SEQ_FILL, UNDO_PAGES,
};

const TPCC_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "warehouses",
        default: "100",
        help: "TPC-C warehouses (the database is about 94 MB each: 100 give the NVMM study's 9.4 GB; about 2,130 the flash placement study's 200 GB, run there with buffer_pool=20g, flush_method=o_direct and, for flash as hybrid memory, hybrid=160g)",
    },
    ParamDef {
        name: "buffer_pool",
        default: "2g",
        help: "innodb_buffer_pool_size, bytes (ESTIMATE: a quarter of the NVMM study's 8 GB of DRAM; the flash placement study: 20g of its 24 GB)",
    },
    INNODB_PARAMS[0],
    INNODB_PARAMS[1],
    INNODB_PARAMS[2],
    INNODB_PARAMS[3],
    INNODB_PARAMS[4],
    INNODB_PARAMS[5],
    INNODB_PARAMS[6],
    INNODB_PARAMS[9],
    ParamDef {
        name: "transactions",
        default: "20000",
        help: "transactions in all clients together (the run ends after them, or at runtime=)",
    },
    ParamDef {
        name: "cpu_us",
        default: "",
        help: "CPU per OLTP transaction, µs, from which TPC-C's CPU per statement is derived (default: the OLTP calibration)",
    },
];

pub(super) static TPCC: AppInfo = AppInfo {
    name: "tpcc",
    summary: "TPC-C on MySQL/InnoDB: new-order, payment, order-status, delivery, stock-level",
    unit: "transactions/s",
    models: &[
        "100 clients (one per warehouse in turn) run the TPC-C mix back to back, no keying or think time (as tpcc-mysql): new-order 45 %, payment 43 %, order-status, delivery and stock-level 4 % each; the metric counts every transaction (tpmC, new-orders a minute, is in the model object)",
        "tables per warehouse with TPC-C's cardinalities and row sizes plus InnoDB's 20 bytes, pages 15/16 full: stock 100,000 x 306 B, customer 30,000 x 655 B (and an index by last name), orders 30,000 x 24 B, order_line 300,000 x 54 B, new_order 9,000 x 8 B, history 30,000 x 46 B; item 100,000 x 82 B shared; about 94 MB a warehouse",
        "new-order: warehouse, district (update), customer; 5-15 lines (uniform), each an item (NURand(8191)), its stock row read and updated (1 % from a remote warehouse) and an order line inserted; an order and a new_order row inserted. payment: warehouse and district updated, customer (60 % by last name: index page and 3 rows) updated, history inserted. order-status: customer (60 % by name), its last order via the orders-by-customer index, its lines. delivery: for 10 districts the oldest new order deleted, its order and lines updated, its customer updated. stock-level: the district, the lines of its last 20 orders, and the stock rows of their ~200 items",
        "customers and items are drawn with TPC-C's NURand (A = 1023 and 8191, C chosen at load): the skew decides the pool's hit ratio",
        "CPU: statements x the CPU per statement carried over from the OLTP calibration, plus rows x 1 µs (ESTIMATE, see calibration)",
        ENGINE_MODELS[0],
        ENGINE_MODELS[1],
        ENGINE_MODELS[2],
        ENGINE_MODELS[3],
        ENGINE_MODELS[4],
    ],
    simplifies: &[
        ENGINE_SIMPLIFIES[0],
        ENGINE_SIMPLIFIES[1],
        ENGINE_SIMPLIFIES[2],
        ENGINE_SIMPLIFIES[3],
        "orders, order lines and new orders reuse each district's region in a ring (the tables do not grow); history appends to one ring",
        "order-status and delivery find their rows by position (the order a customer placed last is a random recent one), not by searching",
        "1 % of new-orders roll back in TPC-C: not modelled",
    ],
    calibration: "no Table V figure for TPC-C: CPU is an ESTIMATE carried over from the OLTP calibration (799 tx/s on moneta-balance): CPU per statement = (OLTP CPU - 414 rows x 1 µs) / 18 statements, and a TPC-C transaction costs its statements x that plus its rows x 1 µs (new-order ~35 statements, ~45 rows)",
    params: TPCC_PARAMS,
    build: build_tpcc,
};

// ---------------------------------------------------------------- tpcc

/// TPC-C row sizes (TPC-C standard, clause 1.3 and 4.2) in bytes.
mod rows {
    pub const WAREHOUSE: u64 = 89;
    pub const DISTRICT: u64 = 95;
    pub const CUSTOMER: u64 = 655;
    pub const HISTORY: u64 = 46;
    pub const NEW_ORDER: u64 = 8;
    pub const ORDERS: u64 = 24;
    pub const ORDER_LINE: u64 = 54;
    pub const ITEM: u64 = 82;
    pub const STOCK: u64 = 306;
    /// An index entry by customer last name (w, d, last, first, id).
    pub const CUSTOMER_NAME_ENTRY: u64 = 4 + 4 + 16 + 16 + 4 + 8;
    /// An index entry of orders by customer (w, d, c, o).
    pub const ORDERS_CUSTOMER_ENTRY: u64 = 16 + 8;
}

/// Transaction kinds in report order.
const TPCC_OPS: &[&str] = &[
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

pub(super) fn build_tpcc(p: &Params) -> Result<AppKind, AppError> {
    let ep = engine_params(p)?;
    let w = p.scaled(p.u64("warehouses", 1, 1 << 20)?, 1);
    let d = w * 10;
    let mut lay = Layouter {
        next: 0,
        firsts: Vec::new(),
    };
    let t =
        |lay: &mut Layouter, rows: u64, bytes: u64| lay.table(rows, bytes + ROW_OVERHEAD, SEQ_FILL);
    let warehouse = t(&mut lay, w, rows::WAREHOUSE);
    let district = t(&mut lay, d, rows::DISTRICT);
    let item = t(&mut lay, 100_000, rows::ITEM);
    let customer = t(&mut lay, d * 3000, rows::CUSTOMER);
    let cust_name = lay.table(d * 3000, rows::CUSTOMER_NAME_ENTRY, RANDOM_FILL);
    let stock = t(&mut lay, w * 100_000, rows::STOCK);
    let orders = t(&mut lay, d * 3000, rows::ORDERS);
    let orders_cust = lay.table(d * 3000, rows::ORDERS_CUSTOMER_ENTRY, RANDOM_FILL);
    let order_line = t(&mut lay, d * 30_000, rows::ORDER_LINE);
    let new_order = t(&mut lay, d * 900, rows::NEW_ORDER);
    let history = t(&mut lay, w * 30_000, rows::HISTORY);
    let undo = lay.table(UNDO_PAGES, PAGE, 1.0);
    let eng = Inno::new(&ep, &lay, undo);
    let stmt_us = statement_us(ep.cpu_us);
    Ok(AppKind::Closed(Box::new(Tpcc {
        eng,
        w,
        tabs: Tabs {
            warehouse,
            district,
            item,
            customer,
            cust_name,
            stock,
            orders,
            orders_cust,
            order_line,
            new_order,
            history,
        },
        stmt_ns: (stmt_us * 1000.0).round() as u64,
        row_ns: (ROW_US * 1000.0).round() as u64,
        next_o: vec![0; d as usize],
        oldest_new: vec![0; d as usize],
        hist_next: 0,
        c_last: 0,
        c_id: 0,
        c_item: 0,
        transactions: ep.transactions,
        started: 0,
        new_orders: 0,
        threads: p.threads(100),
        rng: Pcg64Mcg::seed_from_u64(0),
    })))
}

#[derive(Clone, Copy)]
struct Tabs {
    warehouse: Table,
    district: Table,
    item: Table,
    customer: Table,
    cust_name: Table,
    stock: Table,
    orders: Table,
    orders_cust: Table,
    order_line: Table,
    new_order: Table,
    history: Table,
}

struct Tpcc {
    eng: Inno,
    w: u64,
    tabs: Tabs,
    stmt_ns: u64,
    row_ns: u64,
    /// Next order number of each district (in its ring of 3,000).
    next_o: Vec<u32>,
    /// Oldest undelivered order of each district.
    oldest_new: Vec<u32>,
    hist_next: u64,
    c_last: u64,
    c_id: u64,
    c_item: u64,
    transactions: u64,
    started: u64,
    new_orders: u64,
    threads: u32,
    rng: Pcg64Mcg,
}

impl Tpcc {
    /// TPC-C's NURand(A, x, y) (clause 2.1.6).
    fn nurand(&mut self, a: u64, x: u64, y: u64, c: u64) -> u64 {
        let r1 = self.rng.gen_range(0..=a);
        let r2 = self.rng.gen_range(x..=y);
        (((r1 | r2) + c) % (y - x + 1)) + x
    }

    /// CPU of `stmts` statements handling `rows` rows.
    fn cpu(&mut self, stmts: u64, rows: u64) {
        if !self.eng.dry {
            self.eng
                .steps
                .push(Step::Cpu(stmts * self.stmt_ns + rows * self.row_ns));
        }
    }

    /// A customer of district `dist` (60 % by last name: an index page
    /// and the 3 rows of that name, TPC-C clause 2.5.1.2): its row.
    fn customer(&mut self, dist: u64, write: bool) -> u64 {
        let tb = self.tabs;
        let c = self.nurand(1023, 0, 2999, self.c_id);
        if self.rng.gen_bool(0.6) {
            let name = self.nurand(255, 0, 999, self.c_last);
            self.eng
                .touch(tb.cust_name.page_of(dist * 3000 + name * 3), false, false);
            for _ in 0..2 {
                let r = self.rng.gen_range(0..3000);
                self.eng
                    .touch(tb.customer.page_of(dist * 3000 + r), false, false);
            }
        }
        let row = dist * 3000 + c;
        if write {
            self.eng.change(tb.customer.page_of(row), false)
        } else {
            self.eng.touch(tb.customer.page_of(row), false, false);
            0
        }
    }

    fn new_order(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        let lines = self.rng.gen_range(5..=15u64);
        self.cpu(3 + 3 * lines + 2, 3 + 3 * lines + 2);
        let mut redo = 0;
        self.eng.touch(tb.warehouse.page_of(w), false, false);
        redo += self.eng.change(tb.district.page_of(dist), false);
        self.customer(dist, false);
        let o = self.next_o[dist as usize];
        self.next_o[dist as usize] = (o + 1) % 3000;
        let orow = dist * 3000 + o as u64;
        for l in 0..lines {
            let i = self.nurand(8191, 0, 99_999, self.c_item);
            self.eng.touch(tb.item.page_of(i), false, false);
            let sw = if self.w > 1 && self.rng.gen_bool(0.01) {
                self.rng.gen_range(0..self.w)
            } else {
                w
            };
            redo += self.eng.change(tb.stock.page_of(sw * 100_000 + i), false);
            let line = orow * 10 + l;
            let fresh = line.is_multiple_of(tb.order_line.per_page);
            redo += self.eng.change(tb.order_line.page_of(line), fresh);
        }
        redo += self.eng.change(
            tb.orders.page_of(orow),
            (o as u64).is_multiple_of(tb.orders.per_page),
        );
        redo += self.eng.change(
            tb.orders_cust
                .page_of(dist * 3000 + self.rng.gen_range(0..3000)),
            false,
        );
        let n = dist * 900 + (o as u64 % 900);
        redo += self.eng.change(tb.new_order.page_of(n), false);
        self.new_orders += 1;
        redo
    }

    fn payment(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(6, 6);
        let mut redo = self.eng.change(tb.warehouse.page_of(w), false);
        redo += self.eng.change(tb.district.page_of(dist), false);
        // 15 % of payments are for a customer of a remote warehouse
        let cd = if self.w > 1 && self.rng.gen_bool(0.15) {
            self.rng.gen_range(0..self.w) * 10 + self.rng.gen_range(0..10)
        } else {
            dist
        };
        redo += self.customer(cd, true);
        let h = self.hist_next;
        self.hist_next = (h + 1) % (tb.history.pages * tb.history.per_page);
        redo += self
            .eng
            .change(tb.history.page_of(h), h.is_multiple_of(tb.history.per_page));
        redo
    }

    fn order_status(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(4, 14);
        self.customer(dist, false);
        let o = self.rng.gen_range(0..3000u64);
        self.eng
            .touch(tb.orders_cust.page_of(dist * 3000 + o), false, false);
        let orow = dist * 3000 + o;
        self.eng.touch(tb.orders.page_of(orow), false, false);
        self.eng
            .touch(tb.order_line.page_of(orow * 10), false, false);
        self.eng
            .touch(tb.order_line.page_of(orow * 10 + 9), false, false);
        0
    }

    fn delivery(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        self.cpu(10 * 5, 10 * 14);
        let mut redo = 0;
        for d in 0..10 {
            let dist = w * 10 + d;
            let o = self.oldest_new[dist as usize];
            if o == self.next_o[dist as usize] {
                continue; // nothing to deliver in this district
            }
            self.oldest_new[dist as usize] = (o + 1) % 3000;
            let orow = dist * 3000 + o as u64;
            redo += self
                .eng
                .change(tb.new_order.page_of(dist * 900 + o as u64 % 900), false);
            redo += self.eng.change(tb.orders.page_of(orow), false);
            redo += self.eng.change(tb.order_line.page_of(orow * 10), false);
            redo += self.eng.change(tb.order_line.page_of(orow * 10 + 9), false);
            let c = self.rng.gen_range(0..3000);
            redo += self.eng.change(tb.customer.page_of(dist * 3000 + c), false);
        }
        redo
    }

    fn stock_level(&mut self, w: u64) -> u64 {
        let tb = self.tabs;
        let dist = w * 10 + self.rng.gen_range(0..10);
        self.cpu(2, 1 + 200 + 200);
        self.eng.touch(tb.district.page_of(dist), false, false);
        let o = self.next_o[dist as usize] as u64;
        let first = (o + 3000 - 20) % 3000;
        for k in 0..20u64 {
            let orow = dist * 3000 + (first + k) % 3000;
            self.eng
                .touch(tb.order_line.page_of(orow * 10), false, false);
        }
        for _ in 0..200 {
            let i = self.nurand(8191, 0, 99_999, self.c_item);
            self.eng
                .touch(tb.stock.page_of(w * 100_000 + i), false, false);
        }
        0
    }

    /// One transaction of the mix for a client of warehouse `w`; its
    /// kind.
    fn transaction(&mut self, w: u64) -> u16 {
        let x = self.rng.gen_range(0..100u32);
        let (kind, redo) = match x {
            0..=44 => (0, self.new_order(w)),
            45..=87 => (1, self.payment(w)),
            88..=91 => (2, self.order_status(w)),
            92..=95 => (3, self.delivery(w)),
            _ => (4, self.stock_level(w)),
        };
        // a read-only transaction writes no redo and waits for no log
        // write at commit (trx_commit with no undo)
        if !self.eng.dry && redo > 0 {
            self.eng.commit(redo);
        }
        kind
    }
}

impl Model for Tpcc {
    fn op_names(&self) -> &'static [&'static str] {
        TPCC_OPS
    }

    fn metric(&self) -> MetricKind {
        MetricKind::Rate
    }

    fn threads(&self) -> (u32, u32) {
        (self.threads, 1)
    }

    fn setup(&mut self, cx: &mut SetupCx, seed: u64) -> Result<(), AppError> {
        self.rng = Pcg64Mcg::seed_from_u64(seed ^ 0x79cc);
        // NURand's run-time constants C (clause 2.1.6)
        self.c_last = self.rng.gen_range(0..=255);
        self.c_id = self.rng.gen_range(0..=1023);
        self.c_item = self.rng.gen_range(0..=8191);
        // each district starts with 2,100 orders delivered and 900 new
        for (d, o) in self.next_o.iter_mut().enumerate() {
            *o = 0;
            self.oldest_new[d] = 2100;
        }
        self.eng.setup(cx)?;
        let mut eng = std::mem::replace(&mut self.eng, Inno::placeholder());
        let w = self.w;
        eng.warm(|e| {
            std::mem::swap(&mut self.eng, e);
            let home = self.rng.gen_range(0..w);
            self.transaction(home);
            std::mem::swap(&mut self.eng, e);
        });
        self.eng = eng;
        self.new_orders = 0;
        Ok(())
    }

    fn next_op(&mut self, t: u32, cx: &mut PlanCx) -> Result<bool, AppError> {
        if let Some(more) =
            self.eng
                .before_transaction(t, self.threads, &mut self.started, self.transactions, cx)
        {
            return Ok(more);
        }
        let kind = self.transaction(t as u64 % self.w);
        self.eng.steps.push(Step::End(kind));
        self.eng.emit(cx);
        Ok(true)
    }

    fn extra(&self) -> serde_json::Value {
        let mut v = self.eng.extra();
        v["warehouses"] = json!(self.w);
        v["database_bytes"] = json!(self.eng.pages * PAGE);
        v["new_orders"] = json!(self.new_orders);
        v
    }
}
