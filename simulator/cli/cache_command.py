"""``fleetcast cache``: where the caches are, what they hold, and clearing them."""

from __future__ import annotations

import click

from simulator.cli.app import console, main


@main.command("cache")
@click.option("--clear", is_flag=True, help="Delete the compiled kernels and the capacity curves (rebuilt by "
              "the next run).")
def cache(clear: bool) -> None:
    """Show where Fleetcast keeps its caches (set FLEETCAST_CACHE_DIR to move them) and their size."""
    from simulator import cache_dirs

    folders = cache_dirs.clear_caches() if clear else cache_dirs.cache_folders()
    console.print(f"cache root: {cache_dirs.cache_root()}", highlight=False, markup=False, soft_wrap=True)
    for folder in folders:
        console.print(f"  {folder.path.name:<24} {folder.what:<24} {folder.files:>6,} files "
                      f"{folder.bytes / 1e6:>9,.1f} MB", highlight=False, markup=False)
    if not folders:
        console.print("  (empty)", highlight=False, markup=False)
    elif clear:
        console.print(f"deleted {len(folders)} folder(s)", highlight=False, markup=False)
