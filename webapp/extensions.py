"""Flask extensions, created unbound and bound in ``create_app``."""
from typing import TYPE_CHECKING, ClassVar

from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import Table
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)
migrate = Migrate()
csrf = CSRFProtect()
login_manager = LoginManager()

if TYPE_CHECKING:
    # mypy takes no attribute as a base class (python/mypy#8603); at run time db.Model is
    # Base with Flask-SQLAlchemy's table naming and query mixed in, which this spells out.
    from flask_sqlalchemy.model import Model as _FlaskModel

    class Model(Base, _FlaskModel):
        __table__: ClassVar[Table]  # each model maps one table
else:
    Model = db.Model
