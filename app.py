#!/usr/bin/env python3
"""CDK entry point (`make synth`, `make deploy`, `cdk synth`): see docs/deploy.md."""

import os

# jsii warns that Node 20 is end-of-life; the warning is noise for this project (DESIGN §7).
# It must be set before aws_cdk is imported (the import starts the jsii runtime).
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")  # noqa: TID251

from infra.app import main

if __name__ == "__main__":
    main()
