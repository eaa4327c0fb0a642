# The image allow-list moved from jobs to labs (notebook profiles use it too, and labs must not import jobs).
# Only Django's idea of the model moves: the table keeps its name, jobs_imagerule, and its rows.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0001_initial'),
        ('labs', '0004_notebooks'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ImageRule',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('pattern', models.CharField(help_text='An image reference, or a pattern with * (e.g. registry.lab.example/* or pytorch/pytorch:2.*).', max_length=255, unique=True)),
                        ('description', models.CharField(blank=True, max_length=200)),
                        ('enabled', models.BooleanField(default=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'jobs_imagerule',
                        'ordering': ['pattern'],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.AlterField(
            model_name='notebookprofile',
            name='image',
            field=models.CharField(help_text="Container image of the single-user server, from the lab's image allow-list.", max_length=300),
        ),
    ]
