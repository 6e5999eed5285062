"""The product catalogue in the world and the builds made from it."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from corecraft.world import models as m
from corecraft.world.compat import build_problems
from corecraft.world.generation.base import GeneratorBase
from corecraft.world.vocab import CATEGORIES, WAREHOUSES


class CatalogMixin(GeneratorBase):
    """Products (all or a category-covering subset) and builds, most of them compatible."""

    def products(self) -> None:
        items = list(self.seeds.catalogue)
        wanted = self.recipe.counts.products
        if wanted < len(items):
            items = self.product_subset(items, wanted)
        rows: list[dict[str, Any]] = []
        for item in items:
            stock = sum(item.inventory.get(w, 0) for w in WAREHOUSES)
            rows.append({
                "id": item.sku, "sku": item.sku, "name": item.name, "brand": item.brand,
                "category": item.category, "price": item.price, "description": item.description,
                "specs": {**item.specs, "released": item.released.isoformat()},
                "warranty_months": self.policy.warranty_months[item.category],
                "inventory": {w: item.inventory.get(w, 0) for w in WAREHOUSES},
                "stock_status": "out_of_stock" if stock == 0 else "low_stock" if stock <= 5 else "in_stock",
            })
        rows.sort(key=lambda r: r["id"])
        self.rows[m.Product] = rows

    def product_subset(self, items: list[Any], wanted: int) -> list[Any]:
        """A deterministic subset with every category; a prebuilt brings its components along."""
        by_sku = {p.sku: p for p in items}
        chosen: dict[str, Any] = {}

        def take(item: Any) -> None:
            chosen[item.sku] = item
            for key, value in item.specs.items():
                if key.endswith("_sku") and value in by_sku:
                    chosen[value] = by_sku[value]

        pool = list(items)
        self.rng.shuffle(pool)
        for category in CATEGORIES:
            first = next((p for p in pool if p.category == category), None)
            if first is not None and not any(c.category == category for c in chosen.values()):
                take(first)
        for item in pool:
            if len(chosen) >= wanted:
                break
            take(item)
        return list(chosen.values())

    def builds(self) -> None:
        by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for p in self.rows[m.Product]:
            by_cat[p["category"]].append(p)
        customers = self.rows[m.Customer]
        builds: list[dict[str, Any]] = []
        parts: list[dict[str, Any]] = []
        themes = ("1440p gaming", "4K gaming", "streaming", "workstation", "small form factor", "budget esports")
        rules = self.seeds.fidelity.build_themes
        for i in range(1, self.recipe.counts.builds + 1):
            internal = self.rng.random() < 0.2
            owner: dict[str, Any] | None = None if internal else self.rng.choice(customers)
            components = self.compatible_parts(by_cat)
            if self.rng.random() < 0.3:  # a customer-made mistake: one part swapped at random (our reference
                swap = self.rng.choice(components)  # builds are checked: drawn, not made)
                wrong = self.rng.choice(by_cat[swap["category"]])
                if not internal:
                    components[components.index(swap)] = wrong
            drawn = self.rng.choice(themes)  # the theme drawn if the parts fit it, else one they fit (if any)
            fitting = [t for t in themes if rules[t].fits(components)]
            theme = drawn if drawn in fitting else self.local_rng("theme", str(i)).choice(fitting) if fitting else None
            label = f"{theme} build" if theme else "build"
            name = f"{owner['name'].split()[0]}'s {label}" if owner else f"Reference build: {theme or 'balanced'}"
            low = owner["created_at"] if owner else self.start
            build = {
                "id": f"build-{i:04d}", "name": name, "customer_id": owner["id"] if owner else None,
                "owner_type": "internal" if internal else "customer", "created_at": self.between(low, self.now),
            }
            builds.append(build)
            for n, part in enumerate(components, start=1):
                parts.append({"id": f"{build['id']}-{n}", "build_id": build["id"], "product_id": part["id"], "quantity": 1})
        same: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for build in sorted(builds, key=lambda b: (b["created_at"], b["id"])):
            if build["customer_id"]:
                same[build["customer_id"], build["name"]].append(build)
        for kept in same.values():  # a customer's later build of one kind is saved as the next version
            for n, build in enumerate(kept[1:], start=2):
                build["name"] += f" v{n}"
        self.rows[m.Build] = builds
        self.rows[m.BuildComponent] = parts

    def compatible_parts(self, by_cat: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """A build that passes every rule, when the catalogue allows one (tries a few draws)."""
        order = ("cpu", "motherboard", "memory", "gpu", "psu", "case", "cooling", "storage")
        best: list[dict[str, Any]] = []
        for _ in range(40):
            chosen: list[dict[str, Any]] = []
            for category in order:
                options = [p for p in by_cat.get(category, []) if not build_problems([*chosen, p])]
                if options:
                    chosen.append(self.rng.choice(options))
            if len(chosen) > len(best):
                best = chosen
            if len(chosen) == len([c for c in order if by_cat.get(c)]):
                break
        return best

