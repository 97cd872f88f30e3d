-- The demo shop database behind the code-mode example. Loaded into an in-memory SQLite database at start-up;
-- the query tool can only read it.
CREATE TABLE customers (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL UNIQUE,
  country TEXT NOT NULL,          -- ISO 3166-1 alpha-2
  joined_on TEXT NOT NULL         -- YYYY-MM-DD
);

CREATE TABLE products (
  sku TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  category TEXT NOT NULL,
  price_cents INTEGER NOT NULL CHECK (price_cents >= 0)
);

CREATE TABLE orders (
  id INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  placed_on TEXT NOT NULL,        -- YYYY-MM-DD
  status TEXT NOT NULL CHECK (status IN ('pending', 'shipped', 'delivered', 'refunded', 'cancelled'))
);

CREATE TABLE order_items (
  order_id INTEGER NOT NULL REFERENCES orders(id),
  sku TEXT NOT NULL REFERENCES products(sku),
  quantity INTEGER NOT NULL CHECK (quantity > 0),
  unit_price_cents INTEGER NOT NULL,
  PRIMARY KEY (order_id, sku)
);

INSERT INTO customers (id, name, email, country, joined_on) VALUES
  (1, 'Ada Lovelace', 'ada@example.com', 'GB', '2023-01-15'),
  (2, 'Grace Hopper', 'grace@example.com', 'US', '2023-03-02'),
  (3, 'Alan Turing', 'alan@example.com', 'GB', '2023-06-21'),
  (4, 'Katherine Johnson', 'katherine@example.com', 'US', '2024-02-10'),
  (5, 'Hedy Lamarr', 'hedy@example.com', 'AT', '2024-05-05'),
  (6, 'Edsger Dijkstra', 'edsger@example.com', 'NL', '2024-09-30');

INSERT INTO products (sku, name, category, price_cents) VALUES
  ('KB-01', 'Mechanical keyboard', 'peripherals', 8900),
  ('MS-02', 'Wireless mouse', 'peripherals', 2900),
  ('MN-27', '27-inch monitor', 'displays', 24900),
  ('CB-USB', 'USB-C cable', 'accessories', 1200),
  ('DK-10', 'Docking station', 'accessories', 13900),
  ('HS-05', 'Headset', 'audio', 5900);

INSERT INTO orders (id, customer_id, placed_on, status) VALUES
  (101, 1, '2025-01-04', 'delivered'),
  (102, 2, '2025-01-19', 'delivered'),
  (103, 1, '2025-02-11', 'refunded'),
  (104, 3, '2025-02-27', 'shipped'),
  (105, 4, '2025-03-08', 'delivered'),
  (106, 5, '2025-03-22', 'pending'),
  (107, 2, '2025-04-02', 'delivered'),
  (108, 6, '2025-04-15', 'cancelled'),
  (109, 3, '2025-05-01', 'delivered'),
  (110, 4, '2025-05-20', 'shipped');

INSERT INTO order_items (order_id, sku, quantity, unit_price_cents) VALUES
  (101, 'KB-01', 1, 8900),
  (101, 'CB-USB', 2, 1200),
  (102, 'MN-27', 2, 24900),
  (103, 'HS-05', 1, 5900),
  (104, 'DK-10', 1, 13900),
  (104, 'CB-USB', 1, 1200),
  (105, 'MS-02', 3, 2900),
  (106, 'KB-01', 1, 8900),
  (107, 'MN-27', 1, 24900),
  (107, 'DK-10', 1, 13900),
  (108, 'HS-05', 2, 5900),
  (109, 'MS-02', 1, 2900),
  (109, 'KB-01', 1, 8900),
  (110, 'CB-USB', 4, 1200);
