"""calibcli's commands, one module per family; importing a module registers its commands."""
